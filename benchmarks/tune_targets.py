"""Do more tuning targets help ``distill tune``? Short spans of the corpus sentences, each word alone, bags of words.

    python benchmarks/tune_targets.py RUN [--set best] [--extra none,spans,words,bags,topics,swaps,file:PATH]
        [--bags 0.5] [--topic-share 0.5] [--swap-rate 0.3] [--no-run-bags] [--seed 0]
        [--word-benchmarks simlex999,men,ws353,rw]

STS sentences are short (about ten words), the corpus sentences a run keeps as targets longer. ``spans``
adds, for each kept sentence of eight words or more, one seeded span of 3 to 15 of its words; ``words`` adds
each alphabetic word of the set read alone; ``bags`` adds ``--bags`` per kept sentence of the bags of words
``distill run --teacher-bags`` draws (trained on, never held out, as ``distill tune`` does); ``topics`` as many
bags on one topic each (a seed word and ``--topic-share`` of the bag from its nearest words, the teacher reading
each of the language's words alone); ``swaps`` as many kept sentences with each of the language's words swapped,
at ``--swap-rate``, for one of its ten nearest (both trained on, never held out); ``file:PATH`` the non-empty
lines of a text file (``benchmarks/generate_sentences.py`` writes one). ``--no-run-bags`` leaves out
the bags the run kept itself. The teacher (the
run's model through sentence-transformers) embeds the added texts; the export table is trained as ``distill
tune`` trains it (defaults, cosine loss) on the kept sentences plus the added ones, nothing written to the run,
and every blend is scored as the model2vec export reads sentences: all pairs of STS 2012-2014 (dev) and the MTEB splits.
``--word-benchmarks`` also scores the table's word rows (blend 0: the untuned set) on word similarity, the
pairs the set covers (Spearman x100, pairs covered), as ``distill evaluate`` scores a word2vec file.
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer
from sts_columns import STS_HEADER, sts_cells, table_score  # benchmarks/, this script's folder

from distill.config import Oov
from distill.evaluation.datasets import load_benchmark
from distill.evaluation.report import EvalOptions, score_vectors
from distill.evaluation.sentences import load_sts
from distill.lexicon import BAG_WORDS, frequent_words, nearest_words, word_bags
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions
from distill.tune.teacher import read_teacher
from distill.tune.train import TunedTable, export_table, tune
from distill.vectors.keyed import to_keyed_vectors


def word_columns(words: list[str], rows: np.ndarray, datasets: dict[str, Any]) -> str:
    """Each word benchmark's Spearman x100 (pairs covered) for the first ``len(words)`` rows."""
    kv = to_keyed_vectors(words, rows[: len(words)])
    scores = score_vectors(kv, EvalOptions(tuple(datasets), oov=(Oov.STANDARD,)), datasets)
    return "".join(f" {100 * s.score:.1f} ({s.n_covered:,}) |" for s in scores)


def spans(texts: list[str], seed: int = 0) -> list[str]:
    """One seeded span of 3-15 words from each text of eight words or more (never the whole text)."""
    rng = np.random.default_rng(seed)
    out = []
    for text in texts:
        words = text.split()
        if len(words) >= 8:
            n = int(rng.integers(3, min(16, len(words) - 1) + 1))
            lo = int(rng.integers(0, len(words) - n + 1))
            out.append(" ".join(words[lo : lo + n]))
    return out


def lines(path: str) -> list[str]:
    """A text file's non-empty lines, stripped."""
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


@functools.cache
def language_neighbours(teacher: SentenceTransformer) -> tuple[list[str], np.ndarray]:
    """The words bags are drawn from and each one's nearest such words (itself first), by the teacher's reading of
    each word alone, as ``distill run --bag-topics`` finds them."""
    words = frequent_words(BAG_WORDS)
    return words, nearest_words(teacher.encode(words, batch_size=512, show_progress_bar=False))


def swapped(texts: list[str], n: int, seed: int, teacher: SentenceTransformer, rate: float, k: int = 10) -> list[str]:
    """``n`` seeded kept sentences with each word of the language's list swapped, at ``rate``, for one of its
    ``k`` nearest words: the corpus's syntax around the language's (modern) words."""
    words, near = language_neighbours(teacher)
    position = {w: i for i, w in enumerate(words)}
    rng = np.random.default_rng(seed)
    out = []
    for t in rng.choice(len(texts), size=min(n, len(texts)), replace=False):
        tokens = texts[t].split()
        for j, token in enumerate(tokens):
            i = position.get(token.lower())
            if i is not None and rng.random() < rate:
                tokens[j] = words[near[i, rng.integers(1, k + 1)]]
        out.append(" ".join(tokens))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--extra", default="none,spans,words")
    parser.add_argument("--blends", default="0.5,0.75,1")
    parser.add_argument("--bags", type=float, default=0.5, help="bags added per kept sentence")
    parser.add_argument("--topic-share", type=float, default=0.5, help="share of a topic bag near its seed")
    parser.add_argument("--swap-rate", type=float, default=0.3, help="of a word in a swapped sentence")
    parser.add_argument("--no-run-bags", action="store_true", help="leave out the bags the run itself kept")
    parser.add_argument("--seed", type=int, default=0, help="of the bags, spans and the tuning")
    parser.add_argument("--word-benchmarks", default="", help="also score the words, e.g. simlex999,men,ws353,rw")
    args = parser.parse_args()
    run = RunDir(args.run)
    name = run.resolve_set(args.set)
    table = export_table(run, name, SentenceRecipe(Weighting.SIF))
    texts, targets, run_bags = read_teacher(run.path)
    ids, keep = table.sentence_ids(texts)
    targets = targets[keep]
    is_bag = (np.arange(len(texts)) >= len(texts) - run_bags)[keep]  # the run's own bags (--teacher-bags)
    bag_ids, bag_targets = [i for i, b in zip(ids, is_bag) if b], targets[is_bag]
    ids, targets, texts = [i for i, b in zip(ids, is_bag) if not b], targets[~is_bag], texts[: len(texts) - run_bags]
    if args.no_run_bags:
        bag_ids, bag_targets = [], bag_targets[:0]
    teacher = SentenceTransformer(run.manifest()["model"]["source"], device="cpu")
    pairs = load_sts()
    benchmarks = [b for b in args.word_benchmarks.split(",") if b]
    datasets = {name: load_benchmark(name) for name in benchmarks}  # read once, scored at every blend
    print(f"| added targets | sentences + added | seconds (teacher, tuning) | best epoch | blend | {STS_HEADER} |"
          + "".join(f" {b} |" for b in benchmarks))  # fmt: skip
    print("|---|---|---|---:|---:|" + "---:|" * (8 + len(benchmarks)))
    makers = {
        "none": lambda: [],
        "spans": lambda: spans(texts, args.seed),
        "words": lambda: [w for w in table.words if w.isalpha()],
        "bags": lambda: word_bags(int(args.bags * len(texts)), args.seed),
        "topics": lambda: word_bags(
            int(args.bags * len(texts)), args.seed, near=language_neighbours(teacher)[1], share=args.topic_share
        ),
        "swaps": lambda: swapped(texts, int(args.bags * len(texts)), args.seed, teacher, args.swap_rate),
    }
    for extra in args.extra.split(","):
        added = lines(extra.removeprefix("file:")) if extra.startswith("file:") else makers[extra]()
        t0 = time.perf_counter()
        all_ids, all_targets = ids, targets
        if added:
            embedded = teacher.encode(added, batch_size=256, show_progress_bar=False, convert_to_numpy=True)
            added_ids, added_keep = table.sentence_ids(added)
            all_ids, all_targets = ids + added_ids, np.concatenate([targets, embedded[added_keep]])
        train_only = len(bag_ids) + (len(all_ids) - len(ids) if extra in ("bags", "topics", "swaps") else 0)
        all_ids, all_targets = all_ids + bag_ids, np.concatenate([all_targets, bag_targets])  # bags last, as
        t1 = time.perf_counter()  # distill tune trains on them: never held out
        result = tune(table.start, all_ids, all_targets, TuneOptions(seed=args.seed), train_only=train_only)
        tuned = TunedTable(**vars(table), result=result)
        t2 = time.perf_counter()
        for blend in (float(b) for b in args.blends.split(",")):
            rows = tuned.blended(blend)
            score = table_score(rows, table.tokenizer, pairs, f"{blend}")
            print(f"| {extra} | {len(ids):,} + {len(all_ids) - len(ids):,} | {t1 - t0:.0f}, {t2 - t1:.0f} | "
                  f"{tuned.result.best_epoch} | {blend:g} | {sts_cells(score)} |"
                  + word_columns(table.words, rows, datasets), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
