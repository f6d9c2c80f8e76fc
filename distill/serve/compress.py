"""Make vectors smaller for serving: keep the most frequent words, PCA to fewer dimensions, float16 or int8.

int8 stores ``round(v / scale)`` with one scale per vector (``max |v_i| / 127``), per dimension
(``max |v_:j| / 127``) or for the whole table (model2vec's own int8); :func:`dequantize` gives floats back with
an error of at most ``scale / 2`` per component.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from distill.config import EXPORT_DTYPES, DType, check_dtype
from distill.errors import ConfigError


class Scale(str, Enum):
    VECTOR = "vector"  # one scale per word
    DIMENSION = "dimension"  # one scale per dimension
    TABLE = "table"  # one scale for every number, as model2vec quantizes


@dataclass(frozen=True)
class Quantized:
    """Stored numbers and how to read them back as float32."""

    values: np.ndarray  # (n, d) float32 / float16 / int8
    scale: np.ndarray | None = None  # int8 only: (n, 1) per vector, (1, d) per dimension, (1, 1) per table

    def dequantize(self) -> np.ndarray:
        values = self.values.astype(np.float32)
        return values * self.scale if self.scale is not None else values

    @property
    def dtype(self) -> DType:
        """The numbers stored, as ``--dtype`` names them."""
        return DType(self.values.dtype.name)

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + (self.scale.nbytes if self.scale is not None else 0)


def quantize(vectors: np.ndarray, dtype: DType | str = DType.FLOAT32, scale: Scale | str = Scale.VECTOR) -> Quantized:
    """``vectors`` (n, d) in ``dtype``; int8 with a float32 scale per vector, per dimension or per table."""
    dtype, scale = check_dtype(dtype, EXPORT_DTYPES, "--dtype"), Scale(scale)
    x = np.asarray(vectors, dtype=np.float32)
    if dtype is DType.FLOAT32:
        return Quantized(x)
    if dtype is DType.FLOAT16:
        if np.abs(x).max(initial=0.0) > np.finfo(np.float16).max:
            raise ConfigError("vectors exceed the float16 range; use float32 or int8")
        return Quantized(x.astype(np.float16))
    axis = {Scale.VECTOR: 1, Scale.DIMENSION: 0, Scale.TABLE: None}[scale]
    s = np.abs(x).max(axis=axis, keepdims=True) / 127.0
    s = np.where(s == 0, 1.0, s).astype(np.float32)
    return Quantized(np.clip(np.rint(x / s), -127, 127).astype(np.int8), s)


def top_words(words: list[str], vectors: np.ndarray, n: int | None) -> tuple[list[str], np.ndarray]:
    """The ``n`` first (most frequent) words; all when ``n`` is None."""
    if n is None:
        return words, vectors
    if n < 1:
        raise ConfigError(f"--top-words must be positive, not {n}")
    return words[:n], vectors[:n]


@dataclass(frozen=True)
class Pca:
    """A fitted projection: ``(x - mean) @ components.T`` gives the reduced vectors."""

    mean: np.ndarray  # (d,)
    components: np.ndarray  # (k, d)
    explained_variance_ratio: float

    def transform(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) @ self.components.T).astype(np.float32)


def fit_pca(vectors: np.ndarray, dims: int, center: bool = True) -> Pca:
    """PCA of the vocabulary to ``dims`` dimensions: centred by scikit-learn's full SVD (deterministic), or
    without centring (the top eigenvectors of XᵀX), which keeps a table's mean direction, as a table tuned
    for sentence means needs."""
    from sklearn.decomposition import PCA

    n, d = vectors.shape
    if not 1 <= dims <= min(n, d):
        raise ConfigError(f"--dims must be between 1 and {min(n, d)} (words x dimensions), not {dims}")
    if not center:
        x = np.asarray(vectors, dtype=np.float64)
        values, vecs = np.linalg.eigh(x.T @ x)
        top = np.argsort(values)[::-1][:dims]
        share = float(values[top].sum() / max(values.sum(), 1e-30))
        return Pca(np.zeros(d, dtype=np.float32), vecs[:, top].T.astype(np.float32), share)
    pca = PCA(n_components=dims, svd_solver="full").fit(vectors)
    return Pca(
        pca.mean_.astype(np.float32), pca.components_.astype(np.float32), float(pca.explained_variance_ratio_.sum())
    )
