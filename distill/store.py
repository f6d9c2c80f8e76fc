"""Occurrence store: one float32 ``(n_rows, dim)`` matrix per layer, in RAM or memory-mapped on disk.

Row ``offsets[w] + k`` holds the k-th sampled occurrence of word ``w``. Rows never filled (an
occurrence the tokenizer could not align) stay zero and are not counted in ``filled``. The store
lives in RAM when it takes under half of the memory available, else in ``layer{L}.npy`` files
under ``directory`` (the page cache then decides what stays in memory).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)


def available_memory() -> int:
    """Bytes of memory the kernel says are available (MemAvailable), or physical memory."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class OccurrenceStore:
    """Per-layer occurrence matrices, plus a mask of the rows filled."""

    def __init__(
        self, directory: Path, layers: tuple[int, ...], n_rows: int, dim: int, in_memory: bool | None = None
    ) -> None:
        self.directory = Path(directory)
        self.layers = layers
        self.dim = dim
        size = n_rows * dim * 4 * len(layers)
        self.in_memory = size < available_memory() // 2 if in_memory is None else in_memory
        logger.info("occurrence store: %.2f GB %s", size / 1e9, "in memory" if self.in_memory else "on disk")
        if self.in_memory:
            self.matrices = {layer: np.zeros((n_rows, dim), dtype=np.float32) for layer in layers}
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
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

    def remove(self) -> None:
        self.matrices.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
