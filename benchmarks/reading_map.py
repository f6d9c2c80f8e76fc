"""How far a fitted map moves the words read alone among the corpus words, and what it does to every pair scored
(tried, not kept: RESULTS.md, issue 34).

    python benchmarks/reading_map.py outputs/model-gutenberg-2m [--set layers4-6.mean] [--weights 0,0.15,0.5]
                                     [--ridges 0,0.01,0.1]

For a set of a finished run, the run's model reads the set's corpus words and every benchmark word alone (in the
run's prompt, the set's layers combined as the set combines them). A linear map (least squares, a ridge of R
times the mean eigenvalue) is fitted from the corpus words' readings to their vectors on nine tenths of them
(seeded); the other tenth shows how near it brings a reading to the word's corpus vector (mean
cosine), against the reading as it is. Then, for each alone weight W and ridge (a map fitted on every corpus
word), every pair of SimLex-999, MEN, WS353 (the dev sets of issue 34) and RW, MTurk-287 (held out) is scored with
a corpus word's vector unit(v) + W unit(a) and any other word's (the model's words, words the set lacks) unit(a M)
+ W unit(a), against the same without the map, (1 + W) unit(a), what ``--alone-weight W`` with ``--oov
alone`` gives such a word. Only the scored words are built: each word's vector depends on it alone.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import Oov, evaluate_similarity
from distill.evaluation.report import dataset_words
from distill.rundir import RunDir
from distill.serve.alone import AloneFallback
from distill.vectors.keyed import to_keyed_vectors
from distill.vectors.postprocess import unit

DEV = ("simlex999", "men", "ws353")
HELD_OUT = ("rw", "mturk287")


def fit_map(readings: np.ndarray, targets: np.ndarray, ridge: float) -> np.ndarray:
    """The (dim, dim) map m, applied on the right, that brings each unit reading nearest, in least squares, to its
    word's unit target, with a ridge of ``ridge`` times the mean eigenvalue (the rows are unit: trace = n)."""
    a, b = unit(readings).astype(np.float64), unit(targets).astype(np.float64)
    gram = a.T @ a + ridge * len(a) / a.shape[1] * np.eye(a.shape[1])
    return np.linalg.solve(gram, a.T @ b).astype(np.float32)


def mapped(readings: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Unit rows: the readings moved by the map."""
    return unit(readings @ matrix)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default="best")
    parser.add_argument("--weights", default="0,0.15,0.5")
    parser.add_argument("--ridges", default="0,0.01,0.1")
    args = parser.parse_args()
    run = RunDir(args.run)
    name = run.resolve_set(args.set, None, None)
    kv = run.load(name)
    counts = run.counts(kv.index_to_key, name)
    if counts is None:
        raise SystemExit(f"{args.run} has no vocab.tsv to tell its corpus words by")
    corpus = [w for w, n in zip(kv.index_to_key, counts) if n > 0]  # the rest were read alone
    data = {b: load_benchmark(b) for b in DEV + HELD_OUT}
    scored = sorted({w.lower() for d in data.values() for w in dataset_words(d)})
    words = sorted(set(corpus) | set(scored))
    reader = AloneFallback.open(args.run, name)
    if reader is None:
        raise SystemExit(f"{name} is a set single words cannot be read into")
    readings = dict(zip(words, unit(reader.readings(words)[0])))
    a, c = np.array([readings[w] for w in corpus]), unit(np.asarray(kv[corpus]))
    order = np.random.default_rng(0).permutation(len(corpus))
    test, train = order[: len(corpus) // 10], order[len(corpus) // 10 :]
    ridges = [float(x) for x in args.ridges.split(",")]
    print(f"{args.run} {name}: {len(corpus):,} corpus words of {len(kv.index_to_key):,}; mean cosine of a held-out "
          f"corpus word's vector and its reading {np.mean(np.sum(a[test] * c[test], axis=1)):.3f}")  # fmt: skip
    for ridge in ridges:
        matrix = fit_map(a[train], c[train], ridge)
        near = np.mean(np.sum(mapped(a[test], matrix) * c[test], axis=1))
        print(f"  mapped, ridge {ridge:g}: {near:.3f}")
    in_corpus = set(corpus)
    known = np.array([w in in_corpus for w in scored])
    own = np.array([readings[w] for w in scored])
    vectors = unit(np.array([kv[w] if k else np.zeros(kv.vector_size) for w, k in zip(scored, known)]))
    firsts = {None: own, **{ridge: mapped(own, fit_map(a, c, ridge)) for ridge in ridges}}  # maps on every word
    results = {}
    for weight in [float(x) for x in args.weights.split(",")]:
        for ridge, first in firsts.items():
            x = np.where(known[:, None], vectors, first) + weight * own
            target = to_keyed_vectors(scored, x.astype(np.float32))
            row = {b: 100 * evaluate_similarity(target, d, Oov.PAPER).score for b, d in data.items()}
            label = f"W={weight:g} " + ("as read" if ridge is None else f"mapped, ridge {ridge:g}")
            results[label] = row
            print(label.ljust(28), "  ".join(f"{b} {row[b]:.1f}" for b in DEV + HELD_OUT),
                  f"dev mean {np.mean([row[b] for b in DEV]):.2f}")  # fmt: skip
    print(json.dumps({"run": args.run, "set": name, "scores": results}))


if __name__ == "__main__":
    main()
