"""Derived vector sets of a run: layers combined, pc+mean, dominant directions removed.

``derive(run_dir, Recipe(layers=Layers.parse("1-6"), pooling="mean", remove_top=3))`` reads the run's per-layer sets,
builds one set with :mod:`distill.vectors.postprocess` and writes it beside them like any other set
(``.txt``, ``.bin``, FAISS index), named for what was done, e.g. ``layers1-6.mean.top3``; the run's
manifest lists it under ``derived``. No model runs again. The pipeline derives its recommended set the
same way from the vectors it holds in memory (:func:`derived_vectors` with its own ``load_set``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from distill.choices import Choice
from distill.config import (
    TEMPLATES,
    AlonePool,
    Layers,
    Pooling,
    Template,
    check_alone_pool,
    parse_alone_pool,
    parse_choices,
)
from distill.errors import ConfigError
from distill.lexicon import frequent_words
from distill.names import layers_span, set_files
from distill.rundir import RunDir
from distill.vectors.keyed import to_keyed_vectors
from distill.vectors.postprocess import Combine, combine, remove_top, unit, whiten

#: ``load_set(layer, pooling)``: a layer set of the run as gensim ``KeyedVectors``.
SetLoader = Callable[[int, Pooling], Any]
#: ``read_alone(words, layers)``: each word read alone by the model, the layers combined as a set, (n, d): its
#: pieces' reading (a missing word's own vector) and the reading added at the alone weight (the same array, or
#: both readings summed: :meth:`~distill.serve.alone.AloneFallback.readings`).
AloneReader = Callable[[list[str], list[int]], tuple[np.ndarray, np.ndarray]]


class DerivePooling(Choice):
    """Which pooled vectors of each layer enter the set."""

    PC = "pc"
    MEAN = "mean"
    PC_MEAN = "pc+mean"  # the sum of a word's unit first-PC and unit mean vectors

    def poolings(self) -> tuple[Pooling, ...]:
        return (Pooling.PC, Pooling.MEAN) if self is DerivePooling.PC_MEAN else (Pooling(self.value),)


@dataclass(frozen=True)
class Recipe:
    """How to derive one set: which layers and pooling, how to combine, what to remove."""

    layers: Layers = Layers((1,))
    pooling: DerivePooling = DerivePooling.PC
    combine: Combine = Combine.MEAN
    remove_top: int | None = None  # None: untouched; 0: centred only; D: all-but-the-top D
    whiten: bool = False
    alone: float = 0.0  # weight of each word's unit reading alone by the model, added to its unit vector
    words: int = 0  # also the set's missing words among the N most frequent of English, read alone
    template: Template | None = None  # the prompt those words are read alone in; None: the run's own
    pool: AlonePool = AlonePool.PIECES  # what ``alone`` adds: the pieces' reading, or both (the prompt's too)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", Layers.parse(self.layers))
        if self.template is not None:
            object.__setattr__(self, "template", Template.parse(self.template))
            if not (self.alone or self.words):
                raise ConfigError("an alone template needs words read alone: an alone weight or language words")
        for name, kind in (("pooling", DerivePooling), ("combine", Combine)):
            value = getattr(self, name)
            if not isinstance(value, kind):
                object.__setattr__(self, name, parse_choices(kind, [value], name, many=False)[0])
        if not 0 <= self.alone <= 100:  # as distill run --alone-weight
            raise ConfigError(f"alone must be between 0 (off) and 100, not {self.alone}")
        object.__setattr__(self, "pool", parse_alone_pool(self.pool))
        check_alone_pool(self.pool, self.alone)
        if isinstance(self.words, bool) or not isinstance(self.words, int) or self.words < 0:
            raise ConfigError(f"language words must be a whole number, 0 (off) or more, not {self.words!r}")

    def name(self, layers: list[int]) -> str:
        """The set's name, made of what was done: ``layers4-6.mean``, ``layers1_3.pc+mean.top3``."""
        parts = [layers_span(layers), self.pooling.value]
        if len(layers) > 1 and self.combine is not Combine.MEAN:
            parts.append(self.combine.value)
        if self.remove_top is not None:
            parts.append(f"top{self.remove_top}")
        if self.whiten:
            parts.append("white")
        if self.alone:
            parts.append(f"alone{self.alone:g}")
        if self.pool is not AlonePool.PIECES:
            parts.append(self.pool.value)
        if self.words:
            parts.append(f"words{self.words}")
        if self.template is not None:
            parts.append(_template_part(self.template))
        if len(layers) == 1 and len(parts) == 2 and self.pooling is not DerivePooling.PC_MEAN:
            parts.append("unit")  # one layer, untouched: unit vectors, never the run's own layerL.P file
        return ".".join(parts)

    def to_json(self, layers: list[int], added: int = 0) -> dict[str, Any]:
        """The recipe for the manifest; ``added``: how many language words the set gained (``words``)."""
        data = asdict(self)
        data.update(layers=list(layers), pooling=self.pooling.value, combine=self.combine.value, pool=self.pool.value)
        if self.pool is AlonePool.PIECES:
            del data["pool"]  # recipes written before the option read the same
        if self.words:
            data["words_added"] = added
        else:
            del data["words"]  # recipes written before the option read the same
        if self.template is None:
            del data["template"]  # the run's own prompt, which its config records
        else:
            data["template"] = str(self.template)
        return data


def _template_part(template: Template) -> str:
    """A prompt in a set's name: a built-in's own name (``concept``), or ``prompt`` and a digest of free text."""
    name = str(template)
    if name in TEMPLATES:
        return name
    return "prompt" + hashlib.sha256(template.text.encode()).hexdigest()[:8]


class Derived(NamedTuple):
    """A derived set: its words and vectors, the layers it combines, and how many of its words (the last)
    come from the language's frequent words alone (``Recipe.words``)."""

    words: list[str]
    vectors: np.ndarray
    layers: list[int]
    added: int


def zero_counts(counts: np.ndarray | None, added: int) -> np.ndarray | None:
    """The set's corpus counts followed by 0 for each word added from the language's list."""
    return None if counts is None else np.concatenate([counts, np.zeros(added, dtype=counts.dtype)])


def derived_vectors(
    recipe: Recipe, n_layers: int, load_set: SetLoader, read_alone: AloneReader | None = None
) -> Derived:
    """Words, vectors and layers of ``recipe``, the layer sets read through ``load_set`` (and the words read
    alone through ``read_alone`` when the recipe adds them)."""
    layers = list(recipe.layers.resolve(n_layers))
    parts, words = [], None
    for layer in layers:
        for pooling in recipe.pooling.poolings():
            try:
                kv = load_set(layer, pooling)
            except ConfigError as err:
                raise ConfigError(f"{err}; distil layer {layer} with pooling {pooling} first") from err
            if words is not None and kv.index_to_key != words:
                raise ConfigError("the layer sets list different words; re-run the distillation")
            words = list(kv.index_to_key)
            parts.append(unit(kv.vectors))
    if words is None:
        raise ConfigError(f"no layer set for layers {recipe.layers}")
    x = combine(parts, recipe.combine) if len(parts) > 1 else parts[0]
    if (recipe.alone or recipe.words) and read_alone is None:
        raise ConfigError("adding the words read alone needs the run's model")
    if recipe.alone:
        assert read_alone is not None
        x = (unit(x) + recipe.alone * unit(read_alone(words, layers)[1])).astype(np.float32)
    added: list[str] = []
    if recipe.words:
        known = set(words)
        added = [w for w in frequent_words(recipe.words) if w not in known]
    if added:  # read alone, as a word of the set read alone would be: unit(p) + W unit(a), p its pieces' reading
        assert read_alone is not None
        own, more = read_alone(added, layers)
        new = (1 + recipe.alone) * unit(own) if more is own else unit(own) + recipe.alone * unit(more)
        x = np.vstack([x, new]).astype(np.float32)
        words += added
    if recipe.remove_top is not None:
        x = remove_top(x, recipe.remove_top)
    if recipe.whiten:
        x = whiten(x)
    return Derived(words, x, layers, len(added))


def derive(run_dir: str | Path, recipe: Recipe, progress: bool = True) -> tuple[str, Any]:
    """Write the derived set into the run folder; returns its name and its gensim ``KeyedVectors``. ``progress``:
    a bar while many words are read alone."""
    run = RunDir(run_dir)
    manifest = run.manifest()
    read_alone = None
    if recipe.alone or recipe.words:
        from distill.serve.alone import AloneFallback, run_template

        if recipe.template == run_template(manifest):  # the run's own prompt: the set is named as the run names it
            recipe = replace(recipe, template=None)

        def read_alone(words: list[str], layers: list[int]) -> tuple[np.ndarray, np.ndarray]:
            reader = AloneFallback.for_layers(manifest, layers, recipe.combine.value, recipe.template,
                                              ", or derive without --alone-weight and --language-words")  # fmt: skip
            reader.progress, reader.pool = progress, recipe.pool
            return reader.readings(words)

    words, x, layers, added = derived_vectors(
        recipe, int(manifest["model"]["n_layers"]), lambda layer, pooling: run.load(run.set_for(layer, pooling)),
        read_alone,
    )  # fmt: skip
    name = recipe.name(layers)
    kv = to_keyed_vectors(words, x, zero_counts(run.counts(words[: len(words) - added]), added))
    run.write_set(name, kv)
    run.add_set(name, recipe.to_json(layers, added), set_files(name))
    return name, kv
