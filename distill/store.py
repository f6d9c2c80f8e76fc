"""Occurrence store: one float32 matrix per layer, in RAM or memory-mapped on disk.

Logical row ``offsets[w] + k`` is the k-th sampled occurrence of word ``w``. Vectors are appended
in the order they are encoded (sequential writes are 20x faster than scattering them into fresh
memory) and ``position[row]`` says where each landed; rows never filled (an occurrence the
tokenizer could not align) point at a final zero row and are not counted in ``filled``. The store
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
        self, directory: Path | None, layers: tuple[int, ...], n_rows: int, dim: int, in_memory: bool | None = None
    ) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.layers = layers
        self.dim = dim
        size = n_rows * dim * 4 * len(layers)
        self.in_memory = size < available_memory() // 2 if in_memory is None else in_memory
        logger.info("occurrence store: %.2f GB %s", size / 1e9, "in memory" if self.in_memory else "on disk")
        shape = (n_rows + 1, dim)  # + the zero row that unfilled rows point at
        if self.in_memory:
            self.matrices = {layer: np.zeros(shape, dtype=np.float32) for layer in layers}
        else:
            if self.directory is None:
                raise ValueError("a store on disk needs a directory")
            self.directory.mkdir(parents=True, exist_ok=True)
            self.matrices = {
                layer: np.lib.format.open_memmap(
                    self.directory / f"layer{layer}.npy", mode="w+", dtype=np.float32, shape=shape
                )
                for layer in layers
            }
        self.position = np.full(n_rows, n_rows, dtype=np.int64)
        self.filled = np.zeros(n_rows, dtype=bool)
        self.count = 0

    def write(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """``vectors``: (n_layers, k, dim), layers in ``self.layers`` order; ``rows``: (k,) logical rows."""
        if self.filled[rows].any():
            raise ValueError("an occurrence row was written twice")
        end = self.count + len(rows)
        for i, layer in enumerate(self.layers):
            self.matrices[layer][self.count : end] = vectors[i]
        self.position[rows] = np.arange(self.count, end)
        self.filled[rows] = True
        self.count = end

    def vectors(self, layer: int, rows: np.ndarray) -> np.ndarray:
        """(k, dim) vectors of logical ``rows`` (zero where not filled)."""
        return self.matrices[layer][self.position[rows]]

    def filled_per_word(self, offsets: np.ndarray) -> np.ndarray:
        """(n_words,) number of filled rows of each word."""
        cumulative = np.concatenate([[0], np.cumsum(self.filled, dtype=np.int64)])
        return cumulative[offsets[1:]] - cumulative[offsets[:-1]]

    def remove(self) -> None:
        self.matrices.clear()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
