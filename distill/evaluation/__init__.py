"""Benchmarks for static word vectors: word similarity (Spearman) and more."""

from distill.evaluation.datasets import SimilarityDataset, load_similarity
from distill.evaluation.metrics import SimilarityResult, evaluate_similarity

__all__ = ["SimilarityDataset", "SimilarityResult", "evaluate_similarity", "load_similarity"]
