"""Would a word's vector gain from a share of its sentences' meaning? Each occurrence's state plus S times the mean
state of its sentence's tokens, in each layer, averaged over the word's occurrences.

    python benchmarks/context_share.py [--model minilm] [--corpus outputs/corpora/gutenberg-2m.txt] [--cap 25]
        [--layers 4-6] [--shares 0,-1,-0.5,-0.25,0.25,0.5,1]

For each word of SimLex-999, MEN, WS353 (and its halves) and of the Google analogies: its first ``--cap``
occurrences in the corpus (lines split into sentences after . ! ?, sentences of 3 to 60 words), each sentence
read once by the model, the word's pieces averaged (as runs pool them) and, for each share S, S times the mean of
the sentence's text tokens added (S < 0 removes a part of it: the sentence's common direction). The occurrences
are averaged per layer and the layers combined as ``--best`` combines them (mean of unit vectors). Scores on the
pairs these words cover (Spearman x100) and Google 3CosAdd on the questions they cover, every one of these words
a candidate: only a comparison between the rows of one run.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter

import numpy as np
import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer

from distill.config import Layers
from distill.evaluation.datasets import AnalogyDataset, SimilarityDataset, load_benchmark
from distill.evaluation.metrics import evaluate_analogy, evaluate_similarity
from distill.paths import resolve_model
from distill.vectors.keyed import l2_normalize, to_keyed_vectors

DEV = ("simlex999", "men", "ws353", "ws353_sim", "ws353_rel")
WORD = re.compile(r"[A-Za-z]+|[^\sA-Za-z]")


def contexts(corpus: str, targets: set[str], cap: int) -> list[tuple[list[str], list[int]]]:
    """Sentences holding the targets' first ``cap`` occurrences: (its words, the positions of those occurrences)."""
    seen: Counter[str] = Counter()
    out = []
    with open(corpus, encoding="utf-8") as lines:
        for line in lines:
            for sentence in re.split(r"(?<=[.!?])\s+", line.strip()):
                words = WORD.findall(sentence)
                hits = [i for i, w in enumerate(words) if 3 <= len(words) <= 60 and seen[w.lower()] < cap
                        and w.lower() in targets]  # fmt: skip
                seen.update(words[i].lower() for i in hits)
                if hits:
                    out.append((words, hits))
    return out


def summed(model_path: str, sentences: list, layers: tuple[int, ...], shares: list[float]) -> dict:
    """{(share, layer): {word: sum of its occurrences' vectors}}, the model read in batches of like length."""
    tokenizer, model = AutoTokenizer.from_pretrained(model_path), AutoModel.from_pretrained(model_path).eval()
    sums: dict = {(s, layer): {} for s in shares for layer in layers}
    ordered = sorted(sentences, key=lambda s: len(s[0]))
    with torch.inference_mode():
        for start in range(0, len(ordered), 64):
            batch = ordered[start : start + 64]
            enc = tokenizer([[w.lower() for w in words] for words, _ in batch], is_split_into_words=True,
                            truncation=True, max_length=128, padding=True, return_tensors="pt")  # fmt: skip
            hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                           output_hidden_states=True).hidden_states  # fmt: skip
            for b, (words, hits) in enumerate(batch):
                ids = np.array([-1 if x is None else x for x in enc.word_ids(b)])
                for layer in layers:
                    states = hidden[layer][b].double().numpy()
                    context = states[ids >= 0].mean(axis=0)
                    for i in (i for i in hits if (ids == i).any()):
                        own = states[ids == i].mean(axis=0)
                        for s in shares:
                            row = sums[s, layer]
                            row[words[i].lower()] = row.get(words[i].lower(), 0.0) + own + s * context
    return sums


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--corpus", default="outputs/corpora/gutenberg-2m.txt")
    parser.add_argument("--cap", type=int, default=25, help="occurrences per word at most")
    parser.add_argument("--layers", default="4-6")
    parser.add_argument("--shares", default="0,-1,-0.5,-0.25,0.25,0.5,1")
    args = parser.parse_args()
    sets: dict[str, SimilarityDataset] = {b: load_benchmark(b) for b in DEV}  # type: ignore[misc]
    google: AnalogyDataset = load_benchmark("google")  # type: ignore[assignment]
    targets = {w.lower() for d in sets.values() for pair in d.pairs for w in pair}
    targets |= {w.lower() for question in google.questions for w in question}
    sentences = contexts(args.corpus, targets, args.cap)
    path = resolve_model(args.model)
    layers = Layers.parse(args.layers).resolve(AutoConfig.from_pretrained(path).num_hidden_layers)
    shares = [float(s) for s in args.shares.split(",")]
    t0 = time.perf_counter()
    sums = summed(path, sentences, layers, shares)
    words = sorted(sums[shares[0], layers[0]])
    print(f"{args.model}, {args.corpus}: {len(words):,} of {len(targets):,} words, {len(sentences):,} sentences "
          f"read in {time.perf_counter() - t0:.0f} s; Spearman x100 on covered pairs, Google on covered "
          "questions")  # fmt: skip
    print("| share S | " + " | ".join(DEV) + " | dev mean (SimLex, MEN, WS353) | Google | semantic | syntactic |")
    print("|---:|" + "---:|" * (len(DEV) + 4))
    for s in shares:
        parts = [l2_normalize(np.array([sums[s, layer][w] for w in words], dtype=np.float32)) for layer in layers]
        kv = to_keyed_vectors(words, np.mean(parts, axis=0).astype(np.float32))
        row = [100 * evaluate_similarity(kv, d).score for d in sets.values()]
        analogies = [f"{100 * a.score:.1f} % of {a.n_covered:,}" for a in evaluate_analogy(kv, google)]
        print(f"| {s:g} | " + " | ".join(f"{x:.1f}" for x in row) + f" | {np.mean(row[:3]):.2f} | "
              + " | ".join(analogies) + " |")  # fmt: skip


if __name__ == "__main__":
    main()
