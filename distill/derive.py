"""Derived vector sets of a finished run: layers combined, pc+mean, dominant directions removed.

``derive(run_dir, layers="1-6", pooling="mean", remove_top=3)`` reads the run's per-layer files, builds
one set with :mod:`distill.postprocess` and writes it beside them like any other set (``.txt``, ``.bin``,
FAISS index), named for what was done, e.g. ``layers1-6.mean.top3``; the run's manifest lists it under
``derived``. No model runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import ConfigError, parse_layers
from distill.export import load, read_manifest, run_counts, to_keyed_vectors, write_faiss, write_json, write_word2vec
from distill.postprocess import combine, remove_top, unit, whiten

POOLINGS = ("pc", "mean", "pc+mean")


@dataclass(frozen=True)
class Recipe:
    """How to derive one set: which layers and pooling, how to combine, what to remove."""

    layers: str = "1"
    pooling: str = "pc"
    combine: str = "mean"
    remove_top: int | None = None  # None: untouched; 0: centred only; D: all-but-the-top D
    whiten: bool = False

    def name(self, layers: list[int]) -> str:
        span = f"layer{layers[0]}" if len(layers) == 1 else f"layers{layers[0]}-{layers[-1]}"
        if len(layers) > 1 and layers != list(range(layers[0], layers[-1] + 1)):
            span = "layers" + "_".join(map(str, layers))
        parts = [span, self.pooling.replace("+", "-")]
        if len(layers) > 1 and self.combine != "mean":
            parts.append(self.combine)
        if self.remove_top is not None:
            parts.append(f"top{self.remove_top}")
        if self.whiten:
            parts.append("white")
        if len(layers) == 1 and len(parts) == 2 and self.pooling != "pc+mean":
            parts.append("unit")  # one layer, untouched: unit vectors, never the run's own layerL.P file
        return ".".join(parts)


def derived_vectors(
    run_dir: Path, recipe: Recipe, n_layers: int, load_set: Callable[..., Any] = load
) -> tuple[list[str], np.ndarray, list[int]]:
    """Words, vectors and layers of ``recipe``; ``load_set(run_dir, layer=, pooling=)`` reads a layer set
    (``export.load``; a sweep passes a caching one)."""
    if recipe.pooling not in POOLINGS:
        raise ConfigError(f"unknown pooling {recipe.pooling!r}; use one of: {', '.join(POOLINGS)}")
    layers = list(parse_layers(recipe.layers, n_layers))
    parts, words = [], None
    for layer in layers:
        for pooling in ("pc", "mean") if recipe.pooling == "pc+mean" else (recipe.pooling,):
            try:
                kv = load_set(run_dir, layer=layer, pooling=pooling)
            except ConfigError as err:
                raise ConfigError(f"{err}; distil layer {layer} with pooling {pooling} first") from err
            if words is not None and kv.index_to_key != words:
                raise ConfigError(f"{run_dir}: layer files list different words; re-run the distillation")
            words = list(kv.index_to_key)
            parts.append(unit(kv.vectors))
    assert words is not None
    x = combine(parts, recipe.combine) if len(parts) > 1 else parts[0]
    if recipe.remove_top is not None:
        x = remove_top(x, recipe.remove_top)
    if recipe.whiten:
        x = whiten(x)
    return words, x, layers


def derive(run_dir: str | Path, recipe: Recipe) -> tuple[str, Any]:
    """Write the derived set into the run folder; returns its name and its gensim ``KeyedVectors``."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    words, x, layers = derived_vectors(run_dir, recipe, int(manifest["model"]["n_layers"]))
    counts = run_counts(run_dir, words)
    name = recipe.name(layers)
    kv = to_keyed_vectors(words, x, counts)
    write_word2vec(kv, run_dir / f"{name}.txt")
    write_word2vec(kv, run_dir / f"{name}.bin", binary=True)
    write_faiss(words, x, run_dir / f"{name}.faiss")
    derived = manifest.setdefault("derived", {})
    derived[name] = {
        "layers": layers,
        "pooling": recipe.pooling,
        "combine": recipe.combine,
        "remove_top": recipe.remove_top,
        "whiten": recipe.whiten,
    }
    write_json(manifest, run_dir / "manifest.json")
    return name, kv
