"""Full coverage on a finished ``--pieces`` run: every pair scored, with the run's fallback and a rare-word shrinkage.

    python benchmarks/coverage_sweep.py outputs/minilm-gutenberg [--set best] [--shrink 0,1,2,5,10]
                                        [--remove-top 0,1,2,3] [--standardize] [--alone 0,0.15,0.25,0.5]
                                        [--templates word,bare] [--pools pieces,both] [--analogies 300000]

For the set, each dev benchmark (SimLex-999, MEN, WS353, RW) is scored under three OOV policies: standard (covered
pairs only, with coverage), paper (a missing word gets the mean vector) and pieces (a missing word gets the run's
fallback: the mean of its pieces' vectors, as ``distill evaluate --oov pieces``). Then, for each shrinkage K, every
corpus word's vector becomes unit(n unit(v) + K unit(f)), n its occurrences used (at most the run's cap) and f its
fallback, scored under pieces: how far a rare word's few occurrences should be pulled toward its pieces. Words read
alone (``--model-words``, count 0) and words without a fallback keep their vectors. The shrinkage of a word depends
only on the word, so applying it to the scored words alone gives the scores of applying it to all. Last,
all-but-the-top post-processing (centre on the set's mean, remove its top D principal directions) as one affine map
applied to the set and to the fallback vectors alike, scored under pieces; with ``--standardize``, the same for each
dimension divided by its standard deviation over the set, centred first (``standardized``) or not (``scaled``), and
with ``--analogies N`` Google on the questions the set's first N words cover, before and after each. With
``--alone 0,0.25``: each weight W of the words read alone by the run's model (``distill run --alone-weight W``),
scored on covered pairs and on every pair under ``alone``; with ``--templates``, for each prompt the words are read
alone in (``--alone-template``; default: the run's), and with ``--pools``, for each way the added reading is pooled
(``encode_alone``'s pool; runs read the word's pieces): a word the set lacks then keeps its pieces' reading as its
own vector, to which W times the pooled reading is added, as to a set word; with ``--alone-shrink 0,3``, for each K
a corpus word of n occurrences used (at most the run's cap) gets W + K/n instead of W: the fewer its occurrences,
the more its reading alone counts. With ``--analogies N``, also the Google analogies (a dev set of issue 34) for
each W, every one of the set's first N words read alone. The dev mean is that of SimLex-999, MEN and WS353; RW is
held out (issue 34), shown, never chosen on.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from collections.abc import Callable

import numpy as np

from distill.config import Template
from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import Oov, evaluate_analogy, evaluate_similarity
from distill.evaluation.report import dataset_words, with_fallback
from distill.rundir import RunDir, read_vocab_counts
from distill.serve.pieces import SetFallback
from distill.vectors.keyed import l2_normalize, to_keyed_vectors

DEV = ("simlex999", "men", "ws353")
BENCHMARKS = (*DEV, "rw")


def shrunk(kv, words: set[str], fallback: SetFallback, counts: dict[str, int], cap: int, k: float):
    """``kv`` with the vectors of ``words`` pulled toward their fallback by ``k`` pseudo-occurrences."""
    if k == 0:
        return kv
    vectors = np.array(kv.vectors, dtype=np.float32)
    for word in words:
        i, n = kv.key_to_index.get(word), min(counts.get(word, 0), cap)
        f = fallback.vector(word) if i is not None and n > 0 else None
        if f is not None:
            own = vectors[i] / np.linalg.norm(vectors[i])
            vectors[i] = n * own + k * f / np.linalg.norm(f)
    return to_keyed_vectors(list(kv.index_to_key), l2_normalize(vectors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default="best")
    parser.add_argument("--shrink", default="0,1,2,5,10")
    parser.add_argument("--remove-top", default="0,1,2,3")
    parser.add_argument(
        "--standardize",
        action="store_true",
        help="also each dimension divided by its standard deviation, centred first or not",
    )
    parser.add_argument("--alone", default="", help="weights W of the words read alone, e.g. 0,0.15,0.25,0.5")
    parser.add_argument("--templates", default="", help="prompts to read the words alone in, e.g. word,bare")
    parser.add_argument("--pools", default="", help="how the readings are pooled, e.g. pieces,both")
    parser.add_argument("--alone-shrink", default="0", help="K: a word seen n times is read alone at W + K/n")
    parser.add_argument("--analogies", type=int, default=0, metavar="N",
                        help="with --alone: also Google 3CosAdd for each W, the set's first N words read alone "
                             "as candidates (the questions' words among them)")  # fmt: skip
    args = parser.parse_args()
    run = RunDir(args.run)
    name = run.resolve_set(args.set, None, None)
    kv, manifest = run.load(name), run.manifest()
    fallback = SetFallback.open(args.run, name)
    if fallback is None and not args.alone:
        raise SystemExit(f"{args.run} has no piece vectors for {name}: distil with --pieces, or score --alone")
    if fallback is None:  # a run without piece vectors: only the words read alone
        args.shrink, args.remove_top = "", ""
    counts = read_vocab_counts(RunDir(args.run).vocab_path)
    cap = int(manifest["occurrences"]["per_word_max"])
    data = {b: load_benchmark(b) for b in BENCHMARKS}
    print(f"{args.run} {name}: {len(kv.index_to_key):,} words; Spearman x100 (pairs scored, coverage)")
    results: dict[str, dict[str, float]] = {}
    for oov in (Oov.STANDARD, Oov.PAPER):
        results[oov.value] = {b: evaluate_similarity(kv, d, oov).score for b, d in data.items()}
        cover = {b: evaluate_similarity(kv, d, oov).n_covered / len(d.pairs) for b, d in data.items()}
        print(oov.value.ljust(12), "  ".join(f"{b} {100 * results[oov.value][b]:.1f} ({100 * cover[b]:.0f}%)"
                                             for b in BENCHMARKS))  # fmt: skip
    for k in [float(x) for x in args.shrink.split(",") if x]:
        row = {}
        for b, d in data.items():
            words = dataset_words(d)
            extended = with_fallback(shrunk(kv, words, fallback, counts, cap, k), words, fallback, True)
            score = evaluate_similarity(extended, d, Oov.PAPER)
            row[b] = score.score
            cover = score.n_covered / len(d.pairs)
        results[f"pieces, shrink {k:g}"] = row
        print(f"pieces K={k:<4g}", "  ".join(f"{b} {100 * row[b]:.1f}" for b in BENCHMARKS),
              f"(coverage of {BENCHMARKS[-1]}: {100 * cover:.0f}%)")  # fmt: skip
    for d in [int(x) for x in args.remove_top.split(",") if x]:
        row = remove_top_scores(kv, fallback, data, d)
        results[f"pieces, remove top {d}"] = row
        print(f"pieces top-{d:<3}", "  ".join(f"{b} {100 * row[b]:.1f}" for b in BENCHMARKS))
    if args.standardize:
        results.update(standardized_rows(kv, fallback, data, args.analogies))
    if args.alone:
        weights = [float(x) for x in args.alone.split(",")]
        templates = args.templates.split(",") if args.templates else [None]
        used = {w: min(n, cap) for w, n in counts.items()}  # occurrences a word's vector was made of
        for template, pool in itertools.product(templates, args.pools.split(",") if args.pools else [None]):
            reader = alone_reader(args.run, name, template, pool)
            for k in [float(x) for x in args.alone_shrink.split(",")]:
                results.update(alone_scores(reader, kv, data, weights, used, k))
                if args.analogies:
                    results.update(alone_analogies(reader, kv, weights, args.analogies, used, k))
    print(json.dumps({"run": args.run, "set": name, "scores": results}))


def alone_reader(run: str, name: str, template: str | None, pool: str | None = None):
    """The run's model reading words alone as the set does, in ``template`` (None: the run's prompt), pooled as
    ``pool`` says (None: the word's pieces)."""
    from distill.config import AlonePool
    from distill.serve.alone import AloneFallback

    reader = AloneFallback.open(run, name)
    prompt = reader.template if template is None else Template.parse(template)
    return dataclasses.replace(reader, template=prompt, pool=AlonePool(pool or "pieces"), cache={})


def extra_weight(words: list[str], used: dict[str, int], k: float) -> np.ndarray:
    """(n, 1): K/n for a word of n occurrences used, 0 for a word read alone only (no occurrence) or K = 0."""
    n = np.array([used.get(w, 0) for w in words], dtype=np.float64)
    return np.where(n > 0, k / np.maximum(n, 1), 0.0)[:, None]


def alone_scores(
    reader, kv, data: dict, weights: list[float], used: dict[str, int] | None = None, k: float = 0.0
) -> dict[str, dict[str, float]]:
    """Scores with each weight W of the words read alone (``distill run --alone-weight W``: each word's vector
    unit(v) + W unit(a), a the model's reading of it alone), covered pairs only and every pair under ``alone``
    (a missing word: unit(p) + W unit(a), p its pieces' reading, a itself unless the reading pools the whole
    prompt too). Applied to the scored words only: it depends only on the word."""
    words = sorted({w.lower() for d in data.values() for w in dataset_words(d)})
    own, read = reader.readings(words)  # the pieces' reading, and the one added (the same unless both)
    alone, pieces = l2_normalize(read), l2_normalize(own)
    known = np.array([w in kv.key_to_index for w in words])
    own = l2_normalize(np.array([kv[w] if k else np.zeros(kv.vector_size) for w, k in zip(words, known)]))
    results, extra = {}, extra_weight(words, used or {}, k)
    for w in weights:
        mixed = np.where(known[:, None], own + (w + extra) * alone, pieces + w * alone).astype(np.float32)
        for oov, keep in ((Oov.STANDARD, known), (Oov.PAPER, np.ones_like(known))):
            target = to_keyed_vectors([x for x, k in zip(words, keep) if k], mixed[keep])
            row = {b: evaluate_similarity(target, d, oov).score for b, d in data.items()}
            how = "covered" if oov is Oov.STANDARD else "every pair"
            label = f"alone {reader.template} {reader.pool} W={w:g}" + (f" K={k:g}" if k else "") + f", {how}"
            results[label] = row
            dev = np.mean([row[b] for b in DEV])
            print(label.ljust(40), "  ".join(f"{b} {100 * row[b]:.1f}" for b in BENCHMARKS),
                  f"dev mean {100 * dev:.2f}")  # fmt: skip
    return results


def alone_analogies(
    reader, kv, weights: list[float], top_n: int, used: dict[str, int] | None = None, k: float = 0.0
) -> dict[str, dict[str, float]]:
    """Google 3CosAdd with each weight W of the words read alone: unlike a pair's score, an analogy's answer is
    any word, so the set's first ``top_n`` words are all read alone and mixed as ``distill run`` mixes them.
    Covered questions, and the share of all questions answered (an uncovered one wrong)."""
    words = list(kv.index_to_key[:top_n])
    own = l2_normalize(np.asarray(kv.vectors[: len(words)], dtype=np.float32))
    alone = l2_normalize(reader.readings(words)[1])
    google = load_benchmark("google")
    results, extra = {}, extra_weight(words, used or {}, k)
    for w in weights:
        scores = evaluate_analogy(to_keyed_vectors(words, (own + (w + extra) * alone).astype(np.float32)), google)
        total, answered = scores[0], scores[0].all_questions or 0.0
        label = f"alone {reader.template} {reader.pool} W={w:g}" + (f" K={k:g}" if k else "") + ", google"
        results[label] = {"covered": total.score, "all questions": answered, **{s.section: s.score for s in scores[1:]}}
        print(label.ljust(40), f"3CosAdd {100 * total.score:.1f} % of {total.n_covered:,} covered,",
              f"{100 * answered:.1f} % of all {total.n_total:,}")  # fmt: skip
    return results


class _Mapped:
    """A fallback whose vectors go through the same map as the set's."""

    def __init__(self, fallback: SetFallback, transform) -> None:
        self.fallback, self.transform = fallback, transform

    def vector(self, word: str):
        v = self.fallback.vector(word)
        return None if v is None else self.transform(v / np.linalg.norm(v))

    def vectors(self, words):
        return [self.vector(word) for word in words]


def mapped_scores(kv, x: np.ndarray, fallback: SetFallback, data: dict, transform) -> dict[str, float]:
    """Scores under pieces after one map applied to the set's unit vectors ``x`` and to the fallback vectors
    alike."""
    mapped = to_keyed_vectors(list(kv.index_to_key), transform(x).astype(np.float32))
    return {b: evaluate_similarity(with_fallback(mapped, dataset_words(ds), _Mapped(fallback, transform), True),
                                   ds, Oov.PAPER).score for b, ds in data.items()}  # fmt: skip


def remove_top_scores(kv, fallback: SetFallback, data: dict, d: int, sample: int = 20_000) -> dict[str, float]:
    """Scores under pieces after centring on the set's mean and removing its top ``d`` directions (fitted on a
    seeded sample of at most ``sample`` words)."""
    x = l2_normalize(np.asarray(kv.vectors, dtype=np.float64))
    mean = x.mean(axis=0)
    rows = np.random.default_rng(0).choice(len(x), min(sample, len(x)), replace=False)
    top = np.linalg.svd(x[rows] - mean, full_matrices=False)[2][:d]
    return mapped_scores(kv, x, fallback, data, lambda v: (v - mean) - ((v - mean) @ top.T) @ top)


def standardized_rows(kv, fallback: SetFallback, data: dict, analogies: int) -> dict[str, dict[str, float]]:
    """``--standardize``: the similarity rows under pieces, then Google when ``analogies`` (N words) is set."""
    results = {}
    for centre in (True, False):
        label = "standardized" if centre else "scaled"
        results[f"pieces, {label}"] = row = scaled_scores(kv, fallback, data, centre)
        print(f"pieces {label}", "  ".join(f"{b} {100 * row[b]:.1f}" for b in BENCHMARKS))
    return {**results, **scaled_analogies(kv, analogies)} if analogies else results


def dimension_scaling(kv, centre: bool) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """The set's unit vectors, and the map dividing each dimension by its standard deviation over them (Timkey and
    van Schijndel 2021: a few rogue dimensions dominate cosines), after centring on their mean or not."""
    x = l2_normalize(np.asarray(kv.vectors, dtype=np.float64))
    std, shift = x.std(axis=0), x.mean(axis=0) if centre else 0.0
    return x, lambda v: (v - shift) / std


def scaled_analogies(kv, top_n: int) -> dict[str, dict[str, float]]:
    """Google 3CosAdd on the questions the set's first ``top_n`` words cover, as is, standardized and scaled."""
    words, google, results = list(kv.index_to_key[:top_n]), load_benchmark("google"), {}
    for centre, label in ((None, "as is"), (True, "standardized"), (False, "scaled")):
        if centre is None:
            rows = l2_normalize(np.asarray(kv.vectors[:top_n], dtype=np.float64))
        else:
            x, scale = dimension_scaling(kv, centre)
            rows = scale(x[:top_n])
        total, *sections = evaluate_analogy(to_keyed_vectors(words, rows.astype(np.float32)), google)
        results[f"{label}, google"] = {"covered": total.score, **{s.section: s.score for s in sections}}
        print(f"google, {label}".ljust(24), f"3CosAdd {100 * total.score:.1f} % of {total.n_covered:,} covered,",
              ", ".join(f"{s.section} {100 * s.score:.1f} %" for s in sections))  # fmt: skip
    return results


def scaled_scores(kv, fallback: SetFallback, data: dict, centre: bool) -> dict[str, float]:
    """Scores under pieces after :func:`dimension_scaling`, applied to the set and its fallback alike."""
    x, scale = dimension_scaling(kv, centre)
    return mapped_scores(kv, x, fallback, data, scale)


if __name__ == "__main__":
    main()
