"""Scores of vectors on benchmarks, with coverage beside every score."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from distill.evaluation.datasets import SimilarityDataset


@dataclass(frozen=True)
class SimilarityResult:
    dataset: str
    spearman: float
    n_total: int
    n_covered: int
    oov: str = "skip"


def evaluate_similarity(kv: Any, dataset: SimilarityDataset, lowercase: bool = True) -> SimilarityResult:
    """Spearman between cosine similarities and human scores, on the pairs whose words both have vectors."""
    index = kv.key_to_index
    left, right, gold = [], [], []
    for (a, b), score in zip(dataset.pairs, dataset.scores):
        if lowercase:
            a, b = a.lower(), b.lower()
        if a in index and b in index:
            left.append(index[a])
            right.append(index[b])
            gold.append(score)
    if not gold:
        raise ValueError(
            f"{dataset.name}: none of {len(dataset.pairs)} pairs is in the vocabulary; check the casing policy"
        )
    unit = kv.get_normed_vectors()
    cosines = np.einsum("ij,ij->i", unit[left], unit[right])
    rho = float(spearmanr(cosines, gold).statistic) if len(gold) > 1 else float("nan")
    return SimilarityResult(dataset=dataset.name, spearman=rho, n_total=len(dataset.pairs), n_covered=len(gold))
