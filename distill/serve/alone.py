"""Vectors for words a set lacks, read alone by the run's own model (``--oov alone``).

The model reads the word by itself, in the set's layers, its pieces averaged and the layers combined as the
set combines them: the same reading ``--model-words`` gives the model's whole-word tokens at run time, so
the vector lies in the set's space. It knows more of a word the corpus never had than the mean of its
pieces' static vectors (``--oov pieces``), and costs loading the model once and one short forward pass per
word. Exports, which carry no model, use the pieces.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from distill.config import WORD, AlonePool, Template
from distill.encoders import Encoder, load_encoder
from distill.encoding.alone import encode_alone, summed
from distill.errors import ConfigError
from distill.files import member, read_npz
from distill.names import MANIFEST
from distill.paths import check_run_model_there
from distill.rundir import RunDir, untuned_set
from distill.serve.formats import letters
from distill.serve.pieces import PieceVectors, set_layers, with_rows
from distill.vectors.postprocess import combine, unit

logger = logging.getLogger(__name__)


@dataclass
class AloneFallback:
    """Any word's vector in a set's space, from the run's model reading the word alone."""

    encoder: Encoder
    layers: list[int]
    combine: str | None = None  # None: a layer set; else how a derived set combines its layers
    lowercase: bool = False
    template: Template = field(default_factory=Template)  # the run's prompt (bare for older runs)
    progress: bool = True  # a bar (or log lines) when many words are read at once
    cache: dict[str, np.ndarray | None] = field(default_factory=dict)
    transform: np.ndarray | None = None  # (dim, dim), applied on the right: a tuned set's map (None: none)
    saved: Path | None = None  # a run's folder for the words read so far (encode_alone's saved), during the run
    pool: AlonePool = AlonePool.PIECES  # what the set adds at its alone weight: the pieces' reading, or both
    weight: float = 0.0  # the set's alone weight: a missing word is unit(pieces) + weight unit(both), pooled both
    source: ClassVar[str] = "alone"

    @classmethod
    def open(cls, run_dir: str | Path, set_name: str) -> AloneFallback | None:
        """The run's model, cut after the set's highest layer, on the best device; None for a set single
        vectors cannot follow (post-processed; tuned before tuning kept its map). A tuned set's readings are
        those of the set it was tuned from, moved by its map where its untrained rows went. A model that cannot
        be loaded is a ``ConfigError``."""
        manifest = RunDir(run_dir).manifest()
        transform = tuned_transform(Path(run_dir), manifest, set_name)
        if transform is False:
            return None
        source = untuned_set(manifest, set_name)
        found = set_layers(manifest, source)
        if found is None:
            return None
        fallback = cls.for_layers(manifest, *found, set_template(manifest, source))
        fallback.transform = transform
        record = (manifest.get("derived") or {}).get(source) or {}
        if record.get("pool", AlonePool.PIECES) == AlonePool.BOTH:  # its missing words: pieces + weight x both
            fallback.pool, fallback.weight = AlonePool.BOTH, float(record["alone"])
        return fallback

    @classmethod
    def for_layers(
        cls,
        manifest: dict[str, Any],
        layers: list[int],
        how: str | None,
        template: Template | None = None,
        instead: str = ", or use --oov pieces (oov='pieces')",
    ) -> AloneFallback:
        """The model of the run whose ``manifest`` is given, reading words in ``layers``, combined ``how``
        (None: one layer's own), in ``template`` (None: the run's own prompt); ``instead``: what the user may
        do when the model is gone."""
        model = manifest["model"]
        source = str(model["source"])
        check_run_model_there(source, "words are read alone", instead)
        top = max([*layers, *manifest.get("layers", [])])  # one model serves every set of the run
        # auto: half precision on a GPU, float32 on a CPU (where float16 is slow or unsupported), whatever the run used
        encoder = _encoder(model["name"], source, top, model.get("revision"), model.get("gguf_file"), "auto")
        prompt = run_template(manifest) if template is None else template
        return cls(encoder, layers, how, bool(manifest["vocabulary"]["lowercase"]), prompt)

    def vectors(self, words: Sequence[str]) -> list[np.ndarray | None]:
        """Each word's vector, read in batches (None for a word with no piece, such as an empty one)."""
        folded = [w.lower() if self.lowercase else w for w in words]
        todo = sorted({w for w in folded if w.strip() and w not in self.cache})
        if todo:  # a word the tokenizer gives no piece for (U+200B alone) reads as zeros: it has no vector
            self.cache.update((w, v if v.any() else None) for w, v in zip(todo, self.matrix(todo)))
        return [self.cache.get(w) for w in folded]

    def vector(self, word: str) -> np.ndarray | None:
        """The word's vector (None for an empty word)."""
        return self.vectors([word])[0]

    def matrix(self, words: Sequence[str]) -> np.ndarray:
        """(n, d) float32: the vectors of ``words``, none empty, read in batches and not kept: the pieces' reading,
        or, for a set that adds both readings, unit(pieces) + weight unit(both), as the set holds such a word."""
        own, added = self.readings(words)
        read = own if added is own else (unit(own) + np.float32(self.weight) * unit(added)).astype(np.float32)
        return read if self.transform is None else (read @ self.transform).astype(np.float32)

    def readings(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(n, d) float32 each, read in one pass, the layers combined as the set's: each word's own reading (of
        its pieces; of its last piece when ``pool`` is last), a missing word's vector; and the reading a set adds
        at its alone weight: the same array, or, when ``pool`` reads the whole prompt, that prompt's reading
        (prompt) or each layer's unit pieces' and unit whole-prompt readings summed (both)."""
        folded = [w.lower() if self.lowercase else w for w in words]
        whole = self.pool in (AlonePool.PROMPT, AlonePool.BOTH)
        states = encode_alone(self.encoder, folded, tuple(self.layers), template=self.template, progress=self.progress,
                              saved=self.saved, pool=AlonePool.BOTH if whole else self.pool)  # fmt: skip
        n = len(folded)
        own = self._combined(states[:, :n])
        if not whole:
            return own, own
        return own, self._combined(states[:, n:] if self.pool is AlonePool.PROMPT else summed(states))

    def _combined(self, states: np.ndarray) -> np.ndarray:
        return states[0] if self.combine is None else combine(list(states), self.combine)


def run_template(manifest: dict[str, Any]) -> Template:
    """The prompt a run reads words alone in (bare for runs made before prompts)."""
    return Template.parse(str(manifest.get("config", {}).get("alone_template", WORD)))


def set_template(manifest: dict[str, Any], set_name: str) -> Template | None:
    """The prompt a derived set read its words alone in when it is not the run's own (``distill derive
    --alone-template``); None for the run's own."""
    record = (manifest.get("derived") or {}).get(set_name) or {}
    return None if record.get("template") is None else Template.parse(str(record["template"]))


def tuned_transform(run_dir: Path, manifest: dict[str, Any], set_name: str) -> np.ndarray | Literal[False] | None:
    """The map that takes a reading of the set a tuned set was tuned from into the tuned set's space (composed
    through a set tuned again); None for a set not tuned; False for one tuned without keeping its map."""
    record = (manifest.get("derived") or {}).get(set_name) or {}
    if "tuned_from" not in record:
        return None
    if not record.get("alone_map"):
        return False
    matrix = read_npz(member(run_dir, record["alone_map"], run_dir / MANIFEST), ("map",))["map"]
    dim = int(manifest["model"].get("hidden_size", matrix.shape[0] if matrix.ndim else -1))  # the readings' width
    if matrix.shape != (dim, dim) or not np.isfinite(matrix).all():
        raise ConfigError(f"{run_dir / record['alone_map']} is damaged; tune the set again")
    inner = tuned_transform(run_dir, manifest, str(record["tuned_from"]))
    if inner is False:
        return False
    return matrix.astype(np.float32) if inner is None else (inner @ matrix).astype(np.float32)


@lru_cache(maxsize=1)
def _encoder(name: str, source: str, top: int, revision: str | None, gguf_file: str | None, dtype: str) -> Encoder:
    """The run's model cut after layer ``top``, loaded once for all the sets of a run."""
    return load_encoder(name, source, (top,), revision=revision, gguf_file=gguf_file, dtype=dtype)


def read_unseen_letters(run_dir: str | Path, set_name: str, pieces: PieceVectors) -> PieceVectors:
    """``pieces`` with a vector for each single-letter piece the corpus never showed (a Greek or Cyrillic
    letter in an English corpus; :func:`~distill.serve.formats.letters`): the letter read alone by the run's
    model in the layers of the set (of the set it was tuned from, for a tuned set), at the seen pieces' median
    norm. Every alphabetic word splits down to letters, so an export built on these pieces gives every such
    word a direction (its token table weighs them down: :data:`~distill.serve.formats.LAST_RESORT`).
    Tokenizers without letters, and a model that cannot be loaded (said once), leave ``pieces`` as they are."""
    unseen = {i: letter for i, letter in letters(pieces.tokenizer).items() if pieces.counts[i] == 0}
    if not unseen:
        return pieces
    manifest = RunDir(run_dir).manifest()
    found = set_layers(manifest, untuned_set(manifest, set_name))
    if found is None:
        return pieces
    try:
        reader = AloneFallback.for_layers(manifest, *found)
    except ConfigError as err:
        logger.warning("%d letters the corpus never showed have no vector: %s", len(unseen), err)
        return pieces
    reader.progress = False
    rows = reader.matrix(list(unseen.values()))
    have = np.linalg.norm(pieces.vectors, axis=1)  # a tuned set's piece that is also a word has none
    scale = np.median(have[have > 0]) if np.any(have > 0) else 1.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return with_rows(pieces, list(unseen), rows * (scale / np.where(norms == 0, 1.0, norms)))
