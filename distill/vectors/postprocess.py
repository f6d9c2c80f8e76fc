"""Better static vectors from the same distillation: combine layers and poolings, remove dominant directions.

- ``combine``: the mean (of unit vectors) or the concatenation of several layers' vectors;
- ``pc+mean``: the sum of a word's unit first-PC and unit mean vectors;
- ``remove_top``: all-but-the-top (Mu & Viswanath 2018): subtract the vocabulary mean and the projections on
  its ``d`` top principal directions;
- ``whiten``: PCA whitening of the centred vocabulary (every direction given unit variance, rotated back).
All act on ``(n_words, dim)`` arrays whose rows are the same words in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from distill.choices import Choice
from distill.errors import ConfigError
from distill.vectors.keyed import l2_normalize

unit = l2_normalize  # rows to unit length (zero rows stay zero)


class Combine(Choice):
    """How several layers' vectors become one."""

    MEAN = "mean"  # mean of unit vectors
    CONCAT = "concat"  # concatenation of unit vectors


def combine(parts: Sequence[np.ndarray], how: Combine | str = Combine.MEAN) -> np.ndarray:
    """One vector per word from several ``(n, d_i)`` arrays: mean of unit rows, or their concatenation."""
    if not parts:
        raise ConfigError("nothing to combine")
    if Combine(how) is Combine.MEAN:
        if len({p.shape for p in parts}) != 1:
            raise ConfigError("--combine mean needs vectors of one size; use --combine concat")
        return np.mean([unit(p) for p in parts], axis=0).astype(np.float32)
    return np.hstack([unit(p) for p in parts]).astype(np.float32)


def remove_top(x: np.ndarray, d: int) -> np.ndarray:
    """All-but-the-top: centre, then remove the projections on the top ``d`` principal directions."""
    if d < 0 or d >= min(x.shape):
        raise ConfigError(f"--remove-top must be between 0 and {min(x.shape) - 1}, not {d}")
    centered = x - x.mean(axis=0)
    if d == 0:
        return centered.astype(np.float32)
    top = _principal_directions(centered)[:d]
    return (centered - (centered @ top.T) @ top).astype(np.float32)


def _principal_directions(centered: np.ndarray) -> np.ndarray:
    """Rows: principal directions of a centred (n, dim) matrix, largest first, from the (dim, dim) covariance
    (one matmul and a small eigensolve instead of the SVD of the whole matrix)."""
    c = centered.astype(np.float64)
    _, vectors = np.linalg.eigh(c.T @ c)
    return vectors[:, ::-1].T


def whiten(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """ZCA whitening of the vocabulary: centred, every principal direction scaled to unit variance."""
    centered = (x - x.mean(axis=0)).astype(np.float64)
    values, vectors = np.linalg.eigh(centered.T @ centered / (len(x) - 1))
    scale = 1.0 / np.sqrt(np.maximum(values, eps))
    return ((centered @ vectors) * scale @ vectors.T).astype(np.float32)
