"""gensim ``KeyedVectors`` from arrays, and the word2vec text/binary files gensim's loader reads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distill.files import atomic_path
from distill.vectors.floattext import format_lines


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows to unit length (zero rows stay zero), float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def to_keyed_vectors(words: Sequence[str], vectors: np.ndarray, counts: np.ndarray | None = None) -> Any:
    """gensim ``KeyedVectors`` holding ``vectors`` (n_words, dim) in the given word order.

    ``counts`` (corpus frequencies) become gensim's ``count`` attribute; gensim writes files sorted by it,
    so words must already be in descending count order.
    """
    from gensim.models import KeyedVectors

    if len(set(words)) != len(words):
        raise ValueError("duplicate words")
    kv = KeyedVectors(vector_size=vectors.shape[1], dtype=np.float32)
    # direct assignment: add_vectors checks key by key, far slower for a large vocabulary
    kv.index_to_key = list(words)
    kv.key_to_index = {w: i for i, w in enumerate(kv.index_to_key)}
    kv.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if counts is not None:
        if np.any(np.diff(counts) > 0):
            raise ValueError("words must be sorted by descending count")
        kv.allocate_vecattrs(["count"], [np.int64])
        kv.expandos["count"][:] = counts
    return kv


def write_word2vec(kv: Any, path: str | Path, binary: bool = False) -> Path:
    """word2vec text (``binary=False``) or binary file that ``KeyedVectors.load_word2vec_format`` reads.

    Binary files are gensim's own writer. Text files have gensim's layout, with values formatted by
    :func:`distill.vectors.floattext.format_lines` (9 significant digits: exact for float32), many times
    faster than gensim's per-value ``repr``.
    """
    with atomic_path(path) as tmp:
        if binary:
            kv.save_word2vec_format(str(tmp), binary=True, write_header=True)
        else:
            with open(tmp, "wb") as handle:
                handle.write(f"{len(kv.index_to_key)} {kv.vectors.shape[1]}\n".encode())
                handle.writelines(format_lines(kv.index_to_key, kv.vectors))
    return Path(path)
