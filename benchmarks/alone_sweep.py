"""Which prompt should a word be read alone in? Every template x layer, scored on the dev word sets.

    python benchmarks/alone_sweep.py [--model minilm|mpnet|smollm2] [--templates bare,meaning,...]
        [--pools pieces,last,prompt] [--held-out]

Each word of SimLex-999, MEN and WS353 (and its sim/rel halves) is read alone by the model inside each
template, pooled as each of ``--pools`` says (``encode_alone``'s pool: the word's own pieces, as runs read it, its last
piece, every token of the prompt, or both), in every layer; every pair is scored (Spearman x100), one row per template,
pool and layer, plus the recommended set's layers combined (``best``: their unit vectors averaged, as
``--best`` combines them). ``--sentence-embedding`` adds, per template, the model's own sentence embedding of
the prompt (sentence-transformers, every token pooled).
``--held-out`` adds RW and MTurk-287, to be read only after the choice is made on the dev sets.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from distill.config import TEMPLATES, AlonePool, Template, best_layers
from distill.encoders import is_causal, load_encoder, load_encoder_config
from distill.encoding.alone import encode_alone, summed
from distill.evaluation.datasets import SimilarityDataset, load_similarity
from distill.evaluation.metrics import evaluate_similarity
from distill.paths import default_gguf, resolve_model
from distill.vectors.keyed import to_keyed_vectors
from distill.vectors.postprocess import combine

DEV = ("simlex999", "men", "ws353", "ws353_sim", "ws353_rel")
HELD_OUT = ("rw", "mturk287")


def scores(words: list[str], matrix: np.ndarray, sets: list[SimilarityDataset], lowercase: bool) -> list[float]:
    kv = to_keyed_vectors(words, matrix)
    return [100 * evaluate_similarity(kv, s, "paper", lowercase).score for s in sets]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--templates", default=",".join(TEMPLATES))
    parser.add_argument("--held-out", action="store_true")
    parser.add_argument("--pools", default="pieces", help="how the reading is pooled: pieces, last, prompt, both")
    parser.add_argument(
        "--sentence-embedding",
        action="store_true",
        help="also a row per template for the model's own sentence embedding of the prompt (every token pooled)",
    )
    args = parser.parse_args()
    names = DEV + (HELD_OUT if args.held_out else ())
    sets = [load_similarity(n) for n in names]
    source, gguf_file = resolve_model(args.model), default_gguf(args.model)
    probe = load_encoder(args.model, source, (0,), gguf_file=gguf_file)
    n_layers, lowercase = probe.n_layers, probe.uncased
    layers = tuple(range(n_layers + 1))
    encoder = load_encoder(args.model, source, layers, gguf_file=gguf_file)
    fold = str.lower if lowercase else str
    words = sorted({fold(w) for s in sets for pair in s.pairs for w in pair})
    causal = is_causal(load_encoder_config(args.model, str(source), None, gguf_file))
    top = best_layers(n_layers, causal).resolve(n_layers)
    embedder = None
    if args.sentence_embedding:  # the model's own sentence embedding of the prompt (every token pooled)
        from sentence_transformers import SentenceTransformer

        embedder = SentenceTransformer(str(source), device="cpu")
    span = f"{top[0]}-{top[-1]}" if len(top) > 1 else str(top[0])
    print(f"{args.model}: {len(words):,} words, layers 0-{n_layers}, best = {span}")
    print("| template | pool | layer | " + " | ".join(names) + " | dev mean |")
    print("|---|---|---|" + "---:|" * (len(names) + 1))
    for spec, pool in itertools.product(args.templates.split(","), args.pools.split(",")):
        template = Template.parse(spec)
        t0 = time.perf_counter()
        states = encode_alone(encoder, words, layers, template=template, pool=AlonePool(pool))
        states = summed(states) if pool == AlonePool.BOTH else states
        seconds = time.perf_counter() - t0
        rows = [(str(layer), states[layer]) for layer in layers]
        rows.append(("best", combine([states[layer] for layer in top])))
        if embedder is not None:
            prompts = [template.fill(w)[0] for w in words]
            rows.append(("sentence embedding", embedder.encode(prompts, batch_size=256, normalize_embeddings=True)))
        for label, matrix in rows:
            values = scores(words, matrix, sets, lowercase)
            dev = float(np.mean(values[: len(DEV)]))
            print(f"| {template} | {pool} | {label} | " + " | ".join(f"{v:.1f}" for v in values) + f" | {dev:.1f} |")
        print(f"<!-- {template}, {pool}: {len(words):,} words read in {seconds:.1f} s -->")


if __name__ == "__main__":
    main()
