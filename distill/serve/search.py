"""Nearest-neighbour and similarity queries over exported vectors, through a FAISS index: what a service loads once."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import Oov, parse_choices
from distill.corpus import fold
from distill.errors import ConfigError, OutputError
from distill.files import write_json
from distill.rundir import RunDir, check_no_set, load_file
from distill.serve.anyword import check_fallback, open_fallback
from distill.vectors.faiss_index import IndexKind, build_faiss_index, on_cpu, read_faiss, write_faiss
from distill.vectors.keyed import l2_normalize

logger = logging.getLogger(__name__)


@dataclass
class Searcher:
    """Words, their unit vectors and a FAISS index over them (scores are cosines)."""

    words: list[str]
    unit: np.ndarray  # (n, d) float32, L2-normalised
    index: Any
    kind: IndexKind = IndexKind.FLAT
    fallback: Any = None  # vectors for words outside the vocabulary (pieces.SetFallback, alone.AloneFallback)
    lowercase: bool = False  # a run that folded case: queries are folded too, as the model reads them
    opener: Callable[[], Any] | None = field(default=None, repr=False)  # the fallback, at the first unknown word

    def _fallback(self) -> Any:
        """The fallback, opened now if it was not (its tokenizer or model loads only when a word needs it)."""
        if self.opener is not None:
            self.fallback, self.opener = self.opener(), None
        return self.fallback

    def __post_init__(self) -> None:
        self.key_to_index = {w: i for i, w in enumerate(self.words)}

    def _key(self, word: str) -> str:
        return fold(word, self.lowercase)

    @classmethod
    def open(
        cls,
        path: str | Path,
        layer: int | None = None,
        pooling: str | None = None,
        kind: IndexKind | str = IndexKind.FLAT,
        vector_set: str | None = None,
        oov: Oov | str = Oov.PIECES,
    ) -> Searcher:
        """Vectors from a run folder (a set by name, or a layer and pooling; by default the recommended set)
        or a vector file; the index is read if it was saved beside them (``<stem>.faiss`` for flat,
        ``<stem>.<kind>.faiss`` otherwise), else built and saved. A run folder's words outside the
        vocabulary get the ``oov`` fallback (``pieces`` or ``alone``, see :func:`distill.load`)."""
        kind = parse_choices(IndexKind, [kind], "index kind", many=False)[0]
        path, lowercase = Path(path), False
        check_fallback(oov, path)
        if path.is_dir():
            run = RunDir(path)
            name = run.resolve_set(vector_set, layer, pooling)
            kv, base = run.load(name), path / name
            lowercase = bool(run.manifest()["vocabulary"]["lowercase"])  # queries folded as the words were
        else:
            check_no_set(path, layer, pooling, vector_set)
            kv, base = load_file(path), path.with_suffix("")
        index_path = base.with_name(base.name + (".faiss" if kind is IndexKind.FLAT else f".{kind.value}.faiss"))
        words, unit = list(kv.index_to_key), l2_normalize(kv.vectors)
        digest = None if kind is IndexKind.FLAT else _digest(words, unit)  # a flat index holds its vectors
        index = _saved_index(index_path, words, unit, digest)
        if index is None:
            index = build_faiss_index(kv.vectors, kind)
            _save_index(path if path.is_dir() else None, index_path, kind, words, unit, index, digest)
        opener = (lambda: open_fallback(path, name, oov)) if path.is_dir() else None
        return cls(words, unit, index, kind, None, lowercase, opener)

    def vector(self, word: str) -> tuple[np.ndarray | None, str]:
        """Unit vector of ``word`` and where it came from: ``vocabulary``, the fallback's source (``pieces``,
        ``alone``) or ``none``."""
        i = self.key_to_index.get(self._key(word))
        if i is not None:
            return self.unit[i], "vocabulary"
        fallback = self._fallback()
        v = fallback.vector(word) if fallback is not None else None
        if v is None:
            return None, "none"
        return (v / np.linalg.norm(v)).astype(np.float32), fallback.source

    def neighbors(self, queries: Sequence[str], k: int = 10) -> list[list[tuple[str, float]] | None]:
        """The ``k`` nearest other words of each query, best first; None for a word without a vector
        (an OOV word has one from the run's fallback)."""
        found = [self.vector(q) for q in queries]
        rows = [v for v, _ in found if v is not None]
        out: list[list[tuple[str, float]] | None] = [None] * len(queries)
        if not rows:
            return out
        scores, ids = self.index.search(np.vstack(rows), min(k + 1, self.index.ntotal))  # no more than there are
        j = 0
        for q, (v, _) in enumerate(found):
            if v is None:
                continue
            hits = [
                (self.words[t], float(s))
                for t, s in zip(ids[j], scores[j])
                if t >= 0 and self.words[t] != self._key(queries[q])
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


def _digest(words: Sequence[str], unit: np.ndarray) -> str:
    """The sha256 of the words and unit vectors an index is built from: what a saved index is reused by."""
    digest = hashlib.sha256("\n".join(words).encode("utf-8"))
    digest.update(np.ascontiguousarray(unit, dtype=np.float32).tobytes())
    return digest.hexdigest()


def _source_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".source.json")


def _saved_index(index_path: Path, words: list[str], unit: np.ndarray, digest: str | None) -> Any:
    """The index saved at ``index_path`` when it is proven built from these vectors (a flat index, ``digest``
    None, by its stored vectors; another kind by ``digest`` recorded beside it), else None: it is built again."""
    if not index_path.is_file() or index_path.is_symlink():
        return None
    try:
        index, saved = read_faiss(index_path)
    except ConfigError:
        return None  # damaged: built again
    if saved != words or index.ntotal != len(words):
        return None
    if digest is None:
        stored = on_cpu(index).reconstruct_n(0, index.ntotal) if index.ntotal else unit
        return index if np.array_equal(stored, unit) else None
    source = _source_path(index_path)
    try:
        recorded = json.loads(source.read_text(encoding="utf-8")) if source.is_file() else {}
    except (OSError, ValueError):
        return None
    return index if isinstance(recorded, dict) and recorded.get("vectors_sha256") == digest else None


def _save_index(
    run: Path | None,
    index_path: Path,
    kind: IndexKind,
    words: list[str],
    unit: np.ndarray,
    index: Any,
    digest: str | None,
) -> None:
    """Save a built index beside its vectors, with the ``digest`` of the vectors beside it unless it is flat (in a
    run folder: listed in its manifest, under its lock); a folder that cannot be written keeps nothing, and the
    index is built again next time."""
    if run is None and not index_path.parent.is_dir():
        return
    try:
        files = list(write_faiss(words, unit, index_path, kind, index))
        if digest is not None:
            files.append(write_json({"kind": kind.value, "vectors_sha256": digest}, _source_path(index_path)))
        if run is not None:
            RunDir(run).update_manifest([p.name for p in files])
    except OutputError as err:
        logger.warning("the %s index is not saved (%s); it is built again next time", kind.value, err)
