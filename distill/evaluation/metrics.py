"""Scores of static vectors on benchmarks, with coverage beside every score.

Four out-of-vocabulary policies (``Oov``): ``standard`` scores only the items whose words all have
vectors (as gensim's evaluators do) and reports that coverage; ``paper`` gives a missing word the mean
vector of the vocabulary and scores every item, as the `web` package and Ethayarajh (2019) do; ``pieces``
gives a missing word the run's own fallback (its pieces' vectors, ``--pieces``) and the mean vector only
when none of its pieces was seen; ``alone`` gives it the run's model reading the word alone (see
:mod:`distill.evaluation.report`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from distill.config import Oov
from distill.errors import ConfigError, NothingCovered
from distill.evaluation.datasets import AnalogyDataset, CategorizationDataset, RelationalDataset, SimilarityDataset
from distill.vectors.keyed import l2_normalize


class AnalogyMethod(str, Enum):
    COSADD = "3cosadd"  # argmax cos(d, b - a + c) (Mikolov et al. 2013)
    COSMUL = "3cosmul"  # argmax cos'(d,b) cos'(d,c) / (cos'(d,a) + 1e-3), cos' = (cos + 1) / 2 (Levy & Goldberg 2014)


@dataclass(frozen=True)
class Score:
    """One number of the report: a benchmark (section), its metric and score, and how much of it was covered."""

    benchmark: str
    metric: str  # spearman | accuracy | purity
    score: float
    n_total: int
    n_covered: int
    oov: str = Oov.STANDARD.value
    section: str = "all"
    method: str = ""  # analogies: 3cosadd / 3cosmul
    all_questions: float | None = None  # analogies: share of every question answered, one not covered = wrong


def is_lowercase_vocabulary(kv: Any) -> bool:
    """True when no word of the vocabulary has an upper-case letter (then benchmark words are lowercased)."""
    return not any(w != w.lower() for w in kv.index_to_key)


class _Lookup:
    """Word -> row of unit vectors, with the case policy and the OOV vector in one place."""

    def __init__(self, kv: Any, lowercase: bool | None, top_n: int | None = None) -> None:
        self.lowercase = is_lowercase_vocabulary(kv) if lowercase is None else lowercase
        n = len(kv.index_to_key) if top_n is None else min(top_n, len(kv.index_to_key))
        self.words = kv.index_to_key[:n]
        self.index = {w: i for i, w in enumerate(self.words)}
        raw = np.asarray(kv.vectors[:n], dtype=np.float32)
        self.unit = l2_normalize(raw)
        self.mean = l2_normalize(raw.mean(axis=0, keepdims=True))[0]  # the paper policy's OOV vector

    def ids(self, words: Sequence[str]) -> np.ndarray:
        """Row of each word, -1 where it has no vector."""
        fold = str.lower if self.lowercase else str
        return np.array([self.index.get(fold(w), -1) for w in words], dtype=np.int64)

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Unit vectors of ``ids`` (any shape); the mean vector where an id is -1."""
        out = self.unit[np.maximum(ids, 0)]
        out[ids < 0] = self.mean
        return out


def _spearman(x: np.ndarray, y: np.ndarray | Sequence[float]) -> float:
    """Spearman's rho; NaN when either side is constant (all pairs OOV under ``paper``) or has one item."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(np.asarray(y)) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def _nothing_covered(name: str, n: int, what: str) -> NothingCovered:
    return NothingCovered(f"{name}: none of {n} {what} is in the vocabulary; check the casing policy")


def evaluate_similarity(
    kv: Any, dataset: SimilarityDataset, oov: Oov | str = Oov.STANDARD, lowercase: bool | None = None
) -> Score:
    """Spearman between the pairs' cosine similarities and the human scores."""
    oov = Oov(oov)
    look = _Lookup(kv, lowercase)
    left = look.ids([a for a, _ in dataset.pairs])
    right = look.ids([b for _, b in dataset.pairs])
    covered = (left >= 0) & (right >= 0)
    if not covered.any():
        raise _nothing_covered(dataset.name, len(dataset.pairs), "pairs")
    keep = covered if oov is Oov.STANDARD else np.ones_like(covered)
    cosines = np.einsum("ij,ij->i", look.vectors(left[keep]), look.vectors(right[keep]))
    gold = np.asarray(dataset.scores)[keep]
    return Score(dataset.name, "spearman", _spearman(cosines, gold), len(dataset.pairs), int(covered.sum()), oov.value)


def evaluate_analogy(
    kv: Any,
    dataset: AnalogyDataset,
    method: AnalogyMethod | str = AnalogyMethod.COSADD,
    oov: Oov | str = Oov.STANDARD,
    lowercase: bool | None = None,
    top_n: int | None = None,
    chunk_bytes: int = 1 << 28,
) -> list[Score]:
    """Accuracy on ``a:b :: c:d`` questions: the best candidate other than a, b, c must be d.

    Candidates are the ``top_n`` most frequent words (all by default); a word outside them counts as
    missing. Scored in chunks of questions against the whole candidate matrix (one matmul each).
    Returns the total (section ``all``) then one score per section.
    """
    oov, method = Oov(oov), AnalogyMethod(method)
    look = _Lookup(kv, lowercase, top_n)
    q = np.asarray(dataset.questions)
    ids = look.ids(q.ravel().tolist()).reshape(q.shape)
    covered = (ids >= 0).all(axis=1)
    if not covered.any():
        raise _nothing_covered(dataset.name, len(q), "questions")
    todo = np.flatnonzero(covered if oov is Oov.STANDARD else ids[:, 3] >= 0)  # a missing answer is a miss
    correct = np.zeros(len(q), dtype=bool)
    step = max(1, chunk_bytes // (4 * len(look.words) * (3 if method is AnalogyMethod.COSMUL else 1)))
    for start in range(0, len(todo), step):
        rows = todo[start : start + step]
        a, b, c = (look.vectors(ids[rows, k]) for k in range(3))
        if method is AnalogyMethod.COSADD:
            scores = (b - a + c) @ look.unit.T
        else:
            sa, sb, sc = ((x @ look.unit.T + 1.0) / 2.0 for x in (a, b, c))
            scores = sb * sc / (sa + 1e-3)
        for k in range(3):  # question words are never the answer
            present = ids[rows, k] >= 0
            scores[np.flatnonzero(present), ids[rows[present], k]] = -np.inf
        correct[rows] = scores.argmax(axis=1) == ids[rows, 3]
    sections = np.asarray(dataset.sections)
    out = []
    for section in ["all", *dict.fromkeys(dataset.sections)]:
        mask = np.ones(len(q), dtype=bool) if section == "all" else sections == section
        scored = mask & covered if oov is Oov.STANDARD else mask
        accuracy = float(correct[scored].mean()) if scored.any() else float("nan")
        n_cov, n_all = int((mask & covered).sum()), int(mask.sum())
        right = float(correct[mask & covered].sum() if oov is Oov.STANDARD else correct[mask].sum())
        out.append(Score(dataset.name, "accuracy", accuracy, n_all, n_cov, oov.value, section, method.value,
                         right / max(n_all, 1)))  # fmt: skip
    return out


def purity(labels: Sequence[str], clusters: np.ndarray) -> float:
    """Share of items whose cluster's most common gold label is their own."""
    total = 0
    for cluster in np.unique(clusters):
        members = [labels[int(i)] for i in np.flatnonzero(clusters == cluster)]
        total += Counter(members).most_common(1)[0][1]
    return total / len(labels)


def evaluate_categorization(
    kv: Any,
    dataset: CategorizationDataset,
    oov: Oov | str = Oov.STANDARD,
    lowercase: bool | None = None,
    seed: int = 0,
) -> Score:
    """Cluster purity with as many clusters as categories: the best of agglomerative clustering (ward;
    average and complete linkage, cosine and euclidean) and k-means, as the `web` package reports it."""
    from sklearn.cluster import AgglomerativeClustering, KMeans

    oov = Oov(oov)
    look = _Lookup(kv, lowercase)
    ids = look.ids(dataset.words)
    covered = ids >= 0
    if not covered.any():
        raise _nothing_covered(dataset.name, len(ids), "words")
    keep = np.flatnonzero(covered if oov is Oov.STANDARD else np.ones_like(covered))
    keep = np.random.default_rng(seed).permutation(keep)  # clustering ties depend on order: fix it by the seed
    x = look.vectors(ids[keep])
    labels = [dataset.categories[i] for i in keep]
    k = len(set(labels))
    if k < 2 or len(keep) <= k:
        return Score(dataset.name, "purity", float("nan"), len(ids), int(covered.sum()), oov.value)
    # the vectors are unit length, so both distances come from one Gram matrix (a BLAS matmul, not pdist)
    cosine = np.clip(1.0 - x @ x.T, 0.0, 2.0).astype(np.float64)
    np.fill_diagonal(cosine, 0.0)
    distances = {"cosine": cosine, "euclidean": np.sqrt(2.0 * cosine)}
    predictions = [AgglomerativeClustering(n_clusters=k, linkage="ward").fit_predict(x)]
    predictions += [
        AgglomerativeClustering(n_clusters=k, metric="precomputed", linkage=linkage).fit_predict(d)
        for d in distances.values()
        for linkage in ("average", "complete")
    ]
    # k-means on the distinct rows, weighted by their counts: the same objective, and fast when many
    # missing words share the mean vector (paper policy)
    unique, inverse, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    if len(unique) == len(x):
        predictions.append(KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(x))
    elif len(unique) >= k:
        kmeans = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(unique, sample_weight=counts)
        predictions.append(kmeans.labels_[inverse.ravel()])
    best = max(purity(labels, p) for p in predictions)
    return Score(dataset.name, "purity", best, len(ids), int(covered.sum()), oov.value)


def evaluate_relational(
    kv: Any, dataset: RelationalDataset, oov: Oov | str = Oov.STANDARD, lowercase: bool | None = None
) -> Score:
    """SemEval-2012 Task 2: per subcategory, Spearman between each pair's offset ``b - a`` dotted with the
    prototypes' mean offset and the gold scores; the mean over subcategories (a NaN counts 0, as in `web`).

    Under ``standard`` pairs and prototypes with a missing word are left out, and a subcategory left
    with fewer than two pairs or no prototype is not scored (``n_covered`` counts the pairs scored).
    """
    oov = Oov(oov)
    look = _Lookup(kv, lowercase)
    rhos, n_total, n_covered = [], 0, 0
    for category, pairs in dataset.pairs.items():
        p = look.ids([w for pair in pairs for w in pair]).reshape(-1, 2)
        proto = look.ids([w for pair in dataset.prototypes[category] for w in pair]).reshape(-1, 2)
        gold = np.asarray(dataset.scores[category])
        n_total += len(p)
        if oov is Oov.STANDARD:
            ok, ok_proto = (p >= 0).all(axis=1), (proto >= 0).all(axis=1)
            if ok.sum() < 2 or not ok_proto.any():
                continue
            p, gold, proto = p[ok], gold[ok], proto[ok_proto]
        n_covered += int((p >= 0).all(axis=1).sum())
        offset = (look.vectors(proto[:, 0]) - look.vectors(proto[:, 1])).mean(axis=0)
        scores = (look.vectors(p[:, 0]) - look.vectors(p[:, 1])) @ offset
        rho = _spearman(scores, gold)
        rhos.append(0.0 if np.isnan(rho) else rho)
    if not rhos:
        raise _nothing_covered(dataset.name, n_total, "pairs")
    return Score(dataset.name, "spearman", float(np.mean(rhos)), n_total, n_covered, oov.value)


def check_top_n(top_n: int | None) -> int | None:
    if top_n is not None and top_n < 1:
        raise ConfigError(f"--analogy-top-n must be a positive number of words, not {top_n}")
    return top_n
