"""gensim ``KeyedVectors`` that answer any word: what ``distill.load`` returns for a run with piece vectors.

A word of the vocabulary is its own vector; any other word gets the run's fallback (the mean of its pieces'
vectors in the set's space, :class:`distill.serve.pieces.SetFallback`), scaled to the vocabulary's mean norm.
``source(word)`` says which. ``in`` and ``index_to_key`` stay the vocabulary's, as gensim defines them; the
fallback (the model's tokenizer) is opened at the first word outside the vocabulary, so loading stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gensim.models import KeyedVectors

from distill.rundir import RunDir, has_piece_vectors
from distill.rundir import load as load_vectors

VOCABULARY, PIECES, NONE = "vocabulary", "pieces", "none"


class AnyWordVectors(KeyedVectors):
    """KeyedVectors of a run's set whose lookups fall back to the word's pieces."""

    run_dir: str | None = None
    set_name: str | None = None

    def _fallback(self) -> Any:
        if "_opened" not in self.__dict__:  # at the first unknown word
            self._opened = open_fallback(Path(self.run_dir), str(self.set_name)) if self.run_dir else None
            self._mean_norm = float(np.linalg.norm(self.vectors, axis=1).mean())
        return self._opened

    def __getstate__(self) -> dict[str, Any]:  # kv.save(): the tokenizer is opened again on demand
        state = dict(self.__dict__)
        state.pop("_opened", None)
        state.pop("_mean_norm", None)
        return state

    def _piece_vector(self, word: str) -> np.ndarray | None:
        fallback = self._fallback()
        v = fallback.vector(word) if fallback is not None else None
        return None if v is None else np.asarray(v, dtype=np.float32)

    def source(self, word: str) -> str:
        """``vocabulary``, ``pieces`` (built from the word's pieces) or ``none`` (no vector)."""
        if word in self.key_to_index:
            return VOCABULARY
        return PIECES if self._piece_vector(word) is not None else NONE

    def get_vector(self, key: Any, norm: bool = False) -> np.ndarray:
        if not isinstance(key, str) or key in self.key_to_index:
            return super().get_vector(key, norm=norm)
        v = self._piece_vector(key)
        if v is None:
            raise KeyError(f"Key '{key}' not present: not in the vocabulary, and none of its pieces was seen")
        scale = 1.0 if norm else self._mean_norm
        return (v * (scale / np.linalg.norm(v))).astype(self.vectors.dtype)

    def most_similar(self, positive: Any = None, negative: Any = None, *args: Any, **kwargs: Any) -> Any:
        """gensim's ``most_similar``, a word outside the vocabulary given by its pieces' vector."""
        return super().most_similar(self._as_vectors(positive), self._as_vectors(negative), *args, **kwargs)

    def _as_vectors(self, keys: Any) -> Any:
        if keys is None or isinstance(keys, (str, np.ndarray)):
            keys = [keys] if keys is not None else None
        if keys is None:
            return None
        return [k if not isinstance(k, str) or k in self.key_to_index else self.get_vector(k, norm=True) for k in keys]


def open_fallback(run_dir: Path, set_name: str) -> Any:
    """The fallback of a run's set (:class:`distill.serve.pieces.SetFallback`); None when the run has no piece
    vectors for it. torch and transformers are imported only for a run that has some."""
    if not has_piece_vectors(run_dir):
        return None
    from distill.serve.pieces import SetFallback

    return SetFallback.open(run_dir, set_name)


def load(path: str | Path, layer: int | None = None, pooling: str | None = None, vector_set: str | None = None) -> Any:
    """``distill.load``: vectors as gensim ``KeyedVectors``, from a ``.txt``/``.bin`` file or a set of a run
    folder (by name, ``vector_set="best"`` for the recommended one; by layer and pooling; by default the
    recommended set). A set of a run with piece vectors answers any word (:class:`AnyWordVectors`).

    Needs only numpy and gensim (no torch) until a word outside the vocabulary is looked up.
    """
    path = Path(path)
    if not (path.is_dir() and has_piece_vectors(path)):
        return load_vectors(path, layer, pooling, vector_set)
    run = RunDir(path)
    name = run.resolve_set(vector_set, layer, pooling)
    kv = AnyWordVectors.load_word2vec_format(str(run.set_binary(name)), binary=True)
    kv.run_dir, kv.set_name = str(path), name
    return kv
