"""gensim ``KeyedVectors`` from arrays, and the word2vec text/binary files gensim's loader reads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distill.files import atomic_path
from distill.vectors.floattext import format_lines


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows (the last axis) to unit length (zero rows stay zero), float32."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
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

    Both have gensim's layout and gensim's word order (descending ``count`` where the vectors have one).
    Text values are formatted by :func:`distill.vectors.floattext.format_lines` (9 significant digits: exact for
    float32), many times faster than gensim's per-value ``repr``. Binary files hold gensim's bytes, joined a
    block of words at a time: gensim's writer makes several Python calls per word under the GIL, which stalled
    the other writer threads and the reduction of a run of every layer.
    """
    return write_rows(*file_rows(kv), path, binary)


def file_rows(kv: Any) -> tuple[list[str], np.ndarray]:
    """``kv``'s words and vectors in the order its word2vec file holds them (gensim's)."""
    order = _write_order(kv)
    if order is None:
        return kv.index_to_key, kv.vectors
    return [kv.index_to_key[i] for i in order], kv.vectors[order]


def write_rows(words: Sequence[str], vectors: np.ndarray, path: str | Path, binary: bool = False) -> Path:
    """:func:`write_word2vec` of rows already in file order; needs numpy alone, so a worker process can run it."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        handle.writelines(_binary_lines(words, vectors) if binary else format_lines(words, vectors))
    return Path(path)


def _write_order(kv: Any) -> np.ndarray | None:
    """The rows in gensim's file order (a stable sort by descending count), or None when that is their order."""
    if "count" not in kv.expandos:
        return None
    order = np.argsort(-np.asarray(kv.expandos["count"]), kind="stable")
    return None if np.array_equal(order, np.arange(len(order))) else order


def _binary_lines(words: Sequence[str], vectors: np.ndarray, block: int = 4096) -> Iterator[bytes]:
    """``word `` then the row's float32 bytes (no newline), as gensim writes them, a block of words at a time."""
    raw = np.ascontiguousarray(vectors, dtype=np.float32).data.cast("B")
    step = 4 * vectors.shape[1]
    for start in range(0, len(words), block):
        parts: list[bytes | memoryview] = []
        for i, word in enumerate(words[start : start + block], start):
            parts += (f"{word} ".encode(), raw[i * step : (i + 1) * step])
        yield b"".join(parts)
