"""gensim ``KeyedVectors`` that answer any word: what ``distill.load`` returns for a run folder.

A word of the vocabulary is its own vector; any other word gets the run's fallback in the set's space,
scaled to the vocabulary's mean norm: ``oov="pieces"`` (the default) the mean of its pieces' vectors
(:class:`distill.serve.pieces.SetFallback`, needs a run made with piece vectors), ``oov="alone"`` the run's
model reading the word alone (:class:`distill.serve.alone.AloneFallback`, needs the model). ``source(word)``
says which. ``in`` and ``index_to_key`` stay the vocabulary's, as gensim defines them; the fallback (the
model's tokenizer, or the model) is opened at the first word outside the vocabulary, so loading stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gensim.models import KeyedVectors

from distill.config import Oov
from distill.corpus import fold
from distill.errors import ConfigError
from distill.rundir import RunDir, has_piece_vectors
from distill.rundir import load as load_vectors

#: Where a word's vector came from (:meth:`AnyWordVectors.source`), besides a fallback's own name.
VOCABULARY, NONE = "vocabulary", "none"
#: The OOV policies that give a word outside the vocabulary a vector of the run's own.
FALLBACKS = tuple(policy for policy in Oov if policy.fallback)


class AnyWordVectors(KeyedVectors):
    """KeyedVectors of a run's set whose lookups fall back to the word's pieces or the model reading it."""

    run_dir: str | None = None
    set_name: str | None = None
    oov: Oov = Oov.PIECES
    lowercase: bool = False  # the run folded case: "King" is the vocabulary's "king", as the model reads it

    def _key(self, word: str) -> str:
        return fold(word, self.lowercase)

    def _fallback(self) -> Any:
        if "_opened" not in self.__dict__:  # at the first unknown word
            self._opened = open_fallback(Path(self.run_dir), str(self.set_name), self.oov) if self.run_dir else None
            self._mean_norm = float(np.linalg.norm(self.vectors, axis=1).mean())
        return self._opened

    def __getstate__(self) -> dict[str, Any]:  # kv.save(): the tokenizer is opened again on demand
        state = dict(self.__dict__)
        state.pop("_opened", None)
        state.pop("_mean_norm", None)
        return state

    def _fallback_vector(self, word: str) -> np.ndarray | None:
        fallback = self._fallback()
        v = fallback.vector(word) if fallback is not None else None
        return None if v is None else np.asarray(v, dtype=np.float32)

    def source(self, word: str) -> str:
        """``vocabulary``, ``pieces`` (built from the word's pieces), ``alone`` (the model read it alone) or
        ``none`` (no vector)."""
        if self._key(word) in self.key_to_index:
            return VOCABULARY
        return self._fallback().source if self._fallback_vector(word) is not None else NONE

    def get_vector(self, key: Any, norm: bool = False) -> np.ndarray:
        key = self._key(key) if isinstance(key, str) else key
        if not isinstance(key, str) or key in self.key_to_index:
            return super().get_vector(key, norm=norm)
        v = self._fallback_vector(key)
        if v is None:
            if self._fallback() is None:  # a tuned or post-processed set: single vectors cannot follow it
                why = f"set {self.set_name} has no {self.oov.value} fallback"
            else:
                why = "none of its pieces was seen" if self.oov is Oov.PIECES else "the model cannot read it (empty)"
            raise KeyError(f"Key '{key}' not present: not in the vocabulary, and {why}")
        scale = 1.0 if norm else self._mean_norm
        return (v * (scale / np.linalg.norm(v))).astype(self.vectors.dtype)

    def most_similar(self, positive: Any = None, negative: Any = None, *args: Any, **kwargs: Any) -> Any:
        """gensim's ``most_similar``, a word outside the vocabulary given by its fallback vector."""
        return super().most_similar(self._as_vectors(positive), self._as_vectors(negative), *args, **kwargs)

    def _as_vectors(self, keys: Any) -> Any:
        if keys is None or isinstance(keys, (str, np.ndarray)):
            keys = [keys] if keys is not None else None
        if keys is None:
            return None
        keys = [self._key(k) if isinstance(k, str) else k for k in keys]  # gensim leaves these out of the answers
        return [k if not isinstance(k, str) or k in self.key_to_index else self.get_vector(k, norm=True) for k in keys]


def check_fallback(oov: Oov | str, path: Path | None = None) -> Oov:
    """``oov`` as an Oov policy, when it names a fallback (``alone`` only for a run folder ``path``, whose
    model reads the words); ConfigError otherwise."""
    found = next((policy for policy in FALLBACKS if policy.value == str(getattr(oov, "value", oov))), None)
    if found is None:
        raise ConfigError(f"unknown OOV fallback {oov!r}; use one of {', '.join(p.value for p in FALLBACKS)}")
    if found is Oov.ALONE and path is not None and not path.is_dir():
        raise ConfigError(f"{path} is a vector file: words are read alone by a run's model; give its run folder")
    return found


def open_fallback(run_dir: Path, set_name: str, oov: Oov | str = Oov.PIECES) -> Any:
    """The fallback of a run's set: ``pieces`` (:class:`distill.serve.pieces.SetFallback`; None when the run
    has no piece vectors for it) or ``alone`` (:class:`distill.serve.alone.AloneFallback`; None for a set it
    cannot follow). torch and transformers are imported only here."""
    if check_fallback(oov) is Oov.ALONE:
        from distill.serve.alone import AloneFallback

        return AloneFallback.open(run_dir, set_name)
    if not has_piece_vectors(run_dir):
        return None
    from distill.serve.pieces import SetFallback

    return SetFallback.open(run_dir, set_name)


def load(
    path: str | Path,
    layer: int | None = None,
    pooling: str | None = None,
    vector_set: str | None = None,
    oov: Oov | str = Oov.PIECES,
) -> Any:
    """``distill.load``: vectors as gensim ``KeyedVectors``, from a ``.txt``/``.bin`` file or a set of a run
    folder (by name, ``vector_set="best"`` for the recommended one; by layer and pooling; by default the
    recommended set). A set of a run answers any word (:class:`AnyWordVectors`) from its pieces' vectors
    (``oov="pieces"``, runs made with them) or from the run's model reading the word alone (``oov="alone"``).

    Needs only numpy and gensim (no torch) until a word outside the vocabulary is looked up.
    """
    path = Path(path)
    oov = check_fallback(oov, path)  # here, not at the first unknown word
    if not (path.is_dir() and (oov is Oov.ALONE or has_piece_vectors(path))):
        return load_vectors(path, layer, pooling, vector_set)
    run = RunDir(path)
    name = run.resolve_set(vector_set, layer, pooling)
    kv = AnyWordVectors.load_word2vec_format(str(run.set_binary(name)), binary=True)
    kv.run_dir, kv.set_name, kv.oov = str(path), name, oov
    kv.lowercase = bool(run.manifest()["vocabulary"]["lowercase"])
    return kv
