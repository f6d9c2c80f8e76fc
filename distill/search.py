"""Nearest-neighbour and similarity queries over exported vectors, through a FAISS index: what a service loads once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import ConfigError
from distill.export import INDEX_KINDS, build_faiss_index, l2_normalize, read_faiss, read_manifest, write_faiss


@dataclass
class Searcher:
    """Words, their unit vectors and a FAISS index over them (scores are cosines)."""

    words: list[str]
    unit: np.ndarray  # (n, d) float32, L2-normalised
    index: Any
    kind: str = "flat"
    pieces: Any = None  # pieces.PieceVectors: vectors for words outside the vocabulary

    def __post_init__(self) -> None:
        self.key_to_index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def open(cls, path: str | Path, layer: int | None = None, pooling: str = "pc", kind: str = "flat") -> Searcher:
        """Vectors from a run folder (layer, pooling) or a vector file; the index is read if it was saved
        beside them (``<stem>.faiss`` for flat, ``<stem>.<kind>.faiss`` otherwise), else built and saved."""
        from distill.export import load

        if kind not in INDEX_KINDS:
            raise ConfigError(f"unknown index kind {kind!r}; use one of: {', '.join(INDEX_KINDS)}")
        kv = load(path, layer=layer, pooling=pooling)
        path = Path(path)
        if path.is_dir():
            layer = read_manifest(path)["layers"][0] if layer is None else layer
            base = path / f"layer{layer}.{pooling}"
        else:
            base = path.with_suffix("")
        index_path = base.with_name(base.name + (".faiss" if kind == "flat" else f".{kind}.faiss"))
        words = list(kv.index_to_key)
        if index_path.is_file():
            index, saved = read_faiss(index_path)
            if saved != words:
                raise ConfigError(f"{index_path} does not match the vectors' words; delete it to rebuild")
        else:
            try:
                index = build_faiss_index(kv.vectors, kind)
            except ValueError as err:
                raise ConfigError(str(err)) from err
            if path.is_dir() or path.parent.exists():
                write_faiss(words, kv.vectors, index_path, kind)
        pieces = None
        if path.is_dir() and (path / f"layer{layer}.pieces.npz").is_file():
            from distill.pieces import PieceVectors  # torch and transformers: only for runs with piece vectors

            pieces = PieceVectors.open(path, int(layer))  # type: ignore[arg-type]
        return cls(words, l2_normalize(kv.vectors), index, kind, pieces)

    def vector(self, word: str) -> tuple[np.ndarray | None, str]:
        """Unit vector of ``word`` and where it came from: ``vocabulary``, ``pieces`` (OOV) or ``none``."""
        i = self.key_to_index.get(word)
        if i is not None:
            return self.unit[i], "vocabulary"
        v = self.pieces.vector(word) if self.pieces is not None else None
        if v is None or not np.any(v):
            return None, "none"
        return (v / np.linalg.norm(v)).astype(np.float32), "pieces"

    def neighbors(self, queries: Sequence[str], k: int = 10) -> list[list[tuple[str, float]] | None]:
        """The ``k`` nearest other words of each query, best first; None for a word without a vector
        (an OOV word has one when the run kept piece vectors, see ``distill run --pieces``)."""
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
        """Cosine similarity of two words (OOV words from their pieces; KeyError for a word with no vector)."""
        (va, _), (vb, _) = self.vector(a), self.vector(b)
        if va is None or vb is None:
            raise KeyError(a if va is None else b)
        return float(va @ vb)
