"""Nearest-neighbour and similarity queries over exported vectors, through a FAISS index: what a service loads once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import parse_choices
from distill.errors import ConfigError
from distill.rundir import RunDir, load_file
from distill.serve.anyword import PIECES, open_fallback
from distill.vectors.faiss_index import IndexKind, build_faiss_index, read_faiss, write_faiss
from distill.vectors.keyed import l2_normalize


@dataclass
class Searcher:
    """Words, their unit vectors and a FAISS index over them (scores are cosines)."""

    words: list[str]
    unit: np.ndarray  # (n, d) float32, L2-normalised
    index: Any
    kind: IndexKind = IndexKind.FLAT
    fallback: Any = None  # vectors for words outside the vocabulary (pieces.SetFallback, alone.AloneFallback)

    def __post_init__(self) -> None:
        self.key_to_index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def open(
        cls,
        path: str | Path,
        layer: int | None = None,
        pooling: str | None = None,
        kind: IndexKind | str = IndexKind.FLAT,
        vector_set: str | None = None,
        oov: str = PIECES,
    ) -> Searcher:
        """Vectors from a run folder (a set by name, or a layer and pooling; by default the recommended set)
        or a vector file; the index is read if it was saved beside them (``<stem>.faiss`` for flat,
        ``<stem>.<kind>.faiss`` otherwise), else built and saved. A run folder's words outside the
        vocabulary get the ``oov`` fallback (``pieces`` or ``alone``, see :func:`distill.load`)."""
        kind = parse_choices(IndexKind, [kind], "index kind", many=False)[0]
        path = Path(path)
        if path.is_dir():
            run = RunDir(path)
            name = run.resolve_set(vector_set, layer, pooling)
            kv, base = run.load(name), path / name
        else:
            kv, base = load_file(path), path.with_suffix("")
        index_path = base.with_name(base.name + (".faiss" if kind is IndexKind.FLAT else f".{kind.value}.faiss"))
        words = list(kv.index_to_key)
        if index_path.is_file():
            index, saved = read_faiss(index_path)
            if saved != words:
                raise ConfigError(f"{index_path} does not match the vectors' words; delete it to rebuild")
        else:
            index = build_faiss_index(kv.vectors, kind)
            if path.is_dir() or path.parent.exists():
                write_faiss(words, kv.vectors, index_path, kind, index)
        fallback = open_fallback(path, name, oov) if path.is_dir() else None
        return cls(words, l2_normalize(kv.vectors), index, kind, fallback)

    def vector(self, word: str) -> tuple[np.ndarray | None, str]:
        """Unit vector of ``word`` and where it came from: ``vocabulary``, the fallback's source (``pieces``,
        ``alone``) or ``none``."""
        i = self.key_to_index.get(word)
        if i is not None:
            return self.unit[i], "vocabulary"
        v = self.fallback.vector(word) if self.fallback is not None else None
        if v is None:
            return None, "none"
        return (v / np.linalg.norm(v)).astype(np.float32), self.fallback.source

    def neighbors(self, queries: Sequence[str], k: int = 10) -> list[list[tuple[str, float]] | None]:
        """The ``k`` nearest other words of each query, best first; None for a word without a vector
        (an OOV word has one from the run's fallback)."""
        found = [self.vector(q) for q in queries]
        rows = [v for v, _ in found if v is not None]
        out: list[list[tuple[str, float]] | None] = [None] * len(queries)
        if not rows:
            return out
        scores, ids = self.index.search(np.vstack(rows), k + 1)
        j = 0
        for q, (v, _) in enumerate(found):
            if v is None:
                continue
            hits = [
                (self.words[t], float(s)) for t, s in zip(ids[j], scores[j]) if t >= 0 and self.words[t] != queries[q]
            ]
            out[q] = hits[:k]
            j += 1
        return out

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words (OOV words from the fallback; KeyError for a word with no vector)."""
        (va, _), (vb, _) = self.vector(a), self.vector(b)
        if va is None or vb is None:
            raise KeyError(a if va is None else b)
        return float(va @ vb)
