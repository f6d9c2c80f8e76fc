"""Occurrence store: one float32 ``(n_rows, dim)`` matrix per layer, memory-mapped on disk.

Row ``offsets[w] + k`` holds the k-th sampled occurrence of word ``w``. Rows never filled (an
occurrence the tokenizer could not align) stay zero and are not counted in ``filled``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


class OccurrenceStore:
    """Per-layer occurrence matrices under ``directory`` (``layer{L}.npy``), plus a filled mask."""

    def __init__(self, directory: Path, layers: tuple[int, ...], n_rows: int, dim: int) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.layers = layers
        self.dim = dim
        self.matrices = {
            layer: np.lib.format.open_memmap(
                self.directory / f"layer{layer}.npy", mode="w+", dtype=np.float32, shape=(n_rows, dim)
            )
            for layer in layers
        }
        self.filled = np.zeros(n_rows, dtype=bool)

    def write(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """``vectors``: (n_layers, k, dim), layers in ``self.layers`` order; ``rows``: (k,)."""
        for i, layer in enumerate(self.layers):
            self.matrices[layer][rows] = vectors[i]
        self.filled[rows] = True

    def filled_per_word(self, offsets: np.ndarray) -> np.ndarray:
        """(n_words,) number of filled rows of each word."""
        cumulative = np.concatenate([[0], np.cumsum(self.filled, dtype=np.int64)])
        return cumulative[offsets[1:]] - cumulative[offsets[:-1]]

    def flush(self) -> None:
        for matrix in self.matrices.values():
            matrix.flush()
        np.save(self.directory / "filled.npy", self.filled)

    def remove(self) -> None:
        self.matrices.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
