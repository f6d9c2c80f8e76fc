"""Occurrence store: one matrix per layer, in memory, in files under the run's work folder, or both.

Logical row ``offsets[w] + k`` is the k-th sampled occurrence of word ``w``; each word has at most
``cap`` rows, so the store's size is fixed by the vocabulary and the cap, not by the corpus. Vectors
are appended in the order they are encoded (sequential writes beat scattering them into fresh
memory) and ``position[row]`` says where each landed; rows never filled (an occurrence
the tokenizer could not align) point at a final zero row and are not counted in ``filled``.

With a folder the matrices have ``layer{L}.npy`` files, one per layer, and a checkpoint
(:meth:`state`, after :meth:`flush`) lets a killed run go on where it stopped. Two ways to use them:

- ``in_memory`` (when the store fits in memory): the matrices live in RAM, on transparent huge pages,
  and :meth:`flush` appends the rows written since the last flush to the files. A run that ends
  before its first checkpoint writes nothing to disk: writing costs kernel CPU that the forward pass
  would otherwise have (benchmarks/RESULTS.md).
- otherwise every write is appended to the files with ``pwrite`` (writing through a memory map
  faults in every page); they are read back through read-only memory maps and
  the page cache keeps what fits in memory.

A full disk raises an error that says so. Vectors are float32, or float16 (half the disk and memory)
when asked or, with ``auto``, when a float32 store would take more than half of the available memory.
"""

from __future__ import annotations

import errno
import logging
import math
import mmap
import os
import weakref
from pathlib import Path

import numpy as np
import torch

from distill.errors import OutputError
from distill.names import store_file

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


def store_dtype(choice: str, n_rows: int, dim: int, n_layers: int, saved: Path | None = None) -> np.dtype:
    """float32 or float16 for ``choice`` (auto: float16 when float32 would not fit in half the memory).

    With ``auto`` and the ``saved`` store file of a checkpoint, the dtype that file holds: a resumed run
    keeps its store whatever memory the machine has free now."""
    if choice == "auto" and saved is not None:
        try:
            return np.load(saved, mmap_mode="r").dtype
        except (OSError, ValueError):  # missing or damaged: the store's own check says so
            pass
    if choice == "auto":
        choice = "float32" if n_rows * dim * 4 * n_layers < available_memory() // 2 else "float16"
    return np.dtype(choice)


def store_in_memory(choice: str, n_rows: int, dim: int, n_layers: int, dtype: np.dtype) -> bool:
    """Whether the store lives in RAM (``memory``), in files (``disk``), or, with ``auto``, in RAM when it
    takes at most a third of the available memory."""
    if choice == "auto":
        return (n_rows + 1) * dim * np.dtype(dtype).itemsize * n_layers <= available_memory() // 3
    return choice == "memory"


def zeros(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A zeroed array on transparent huge pages where the kernel offers them: first writes to 4 KiB
    pages of fresh memory cost more than the copy itself."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes < 2**21 or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.zeros(shape, dtype=dtype)
    buffer = mmap.mmap(-1, nbytes)  # anonymous memory reads as zeros
    buffer.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


def _close_all(fds: list[int]) -> None:
    while fds:
        os.close(fds.pop())


class OccurrenceStore:
    """Per-layer occurrence matrices, plus a mask of the rows filled."""

    def __init__(
        self,
        directory: Path | None,
        layers: tuple[int, ...],
        n_rows: int,
        dim: int,
        dtype: np.dtype | str | type[np.floating] = np.float32,
        reopen: bool = False,
        in_memory: bool = False,
    ) -> None:
        """A store in RAM (``directory`` None), in ``directory``, or in RAM saved to ``directory`` at each
        :meth:`flush` (``in_memory``); ``reopen`` opens the files of a checkpoint."""
        self.directory = Path(directory) if directory is not None else None
        self.layers = layers
        self.dim = dim
        self.dtype = np.dtype(dtype)
        self.in_memory = in_memory or self.directory is None
        shape = (n_rows + 1, dim)  # + the zero row that unfilled rows point at
        size = shape[0] * dim * self.dtype.itemsize * len(layers)
        where = f"in files in {self.directory}"
        if self.in_memory:
            where = "in memory" + ("" if self.directory is None else f", saved in {self.directory} at checkpoints")
        logger.info("occurrence store: %.2f GB of %s %s", size / 1e9, self.dtype.name, where)
        self._files: dict[int, tuple[int, int]] = {}  # layer -> (file descriptor, data offset)
        self._saved = 0  # rows already in the files (in memory with a folder)
        fds: list[int] = []
        self._close = weakref.finalize(self, _close_all, fds)  # the files close when the store is collected
        self.matrices: dict[int, np.ndarray] = {}
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            for layer in layers:
                path = self._path(layer)
                if not reopen:  # header and size; the data stays a hole, read as zeros, until written
                    np.lib.format.open_memmap(path, mode="w+", dtype=self.dtype, shape=shape)  # unmapped at once
                try:
                    matrix = np.load(path, mmap_mode="r")
                except (OSError, ValueError) as err:  # a damaged checkpoint: truncated, not an .npy file
                    raise OutputError(f"cannot read the store file {path} ({err}); run again with --restart") from err
                if matrix.shape != shape or matrix.dtype != self.dtype:
                    raise OutputError(
                        f"the store file {path} holds {matrix.shape} {matrix.dtype}, not {shape} {self.dtype}; "
                        "run again with --restart"
                    )
                self.matrices[layer] = matrix
                fds.append(os.open(path, os.O_RDWR))
                self._files[layer] = (fds[-1], matrix.offset)
        self._all: np.ndarray | None = None  # in memory: every layer in one array, written with one copy
        if self.in_memory:
            self._allocate((len(layers), *shape))
        self.position = np.full(n_rows, n_rows, dtype=np.int64)
        self.filled = np.zeros(n_rows, dtype=bool)
        self.count = 0

    def _path(self, layer: int) -> Path:
        """The file of ``layer``'s matrix in the store's folder."""
        return self.directory / store_file(layer)  # type: ignore[operator]

    def _allocate(self, shape: tuple[int, int, int]) -> None:
        """The in-memory matrices, (n_layers, n_rows + 1, dim)."""
        self._all = zeros(shape, self.dtype)
        self.matrices = {layer: self._all[i] for i, layer in enumerate(self.layers)}

    def _claim(self, rows: np.ndarray) -> tuple[int, int]:
        """Append slots ``[start, end)`` for logical ``rows``, recorded as filled."""
        if self.filled[rows].any():
            raise ValueError("an occurrence row was written twice")
        start, end = self.count, self.count + len(rows)
        self.position[rows] = np.arange(start, end)
        self.filled[rows] = True
        self.count = end
        return start, end

    def write(self, rows: np.ndarray, vectors: np.ndarray | torch.Tensor) -> None:
        """``vectors``: (n_layers, k, dim), layers in ``self.layers`` order; ``rows``: (k,) logical rows."""
        if isinstance(vectors, torch.Tensor):
            vectors = vectors.cpu().numpy()
        start, end = self._claim(rows)
        if self._all is not None:
            self._all[:, start:end] = vectors  # one copy for all layers, not one per layer
        else:
            for i, layer in enumerate(self.layers):
                fd, offset = self._files[layer]
                data = memoryview(np.ascontiguousarray(vectors[i], dtype=self.dtype).data).cast("B")
                self._pwrite(fd, data, offset + start * self.dim * self.dtype.itemsize)

    def _pwrite(self, fd: int, data: memoryview, at: int) -> None:
        try:
            while data:
                written = os.pwrite(fd, data, at)
                data, at = data[written:], at + written
        except OSError as err:
            if err.errno == errno.ENOSPC:
                raise OutputError(
                    f"cannot write the occurrence store in {self.directory}: the disk is full; free some space or "
                    f"choose another --out (a float16 store, --store-dtype float16, takes half the space)"
                ) from err
            raise OutputError(
                f"cannot write the occurrence store in {self.directory}: {err.strerror or err}; choose another --out"
            ) from err

    def vectors(self, layer: int, rows: np.ndarray) -> np.ndarray:
        """(k, dim) vectors of logical ``rows`` (zero where not filled)."""
        return self.matrices[layer][self.position[rows]]

    def layer(self, layer: int) -> np.ndarray:
        """The whole matrix of ``layer`` (rows in ``position`` order): in RAM, or a fresh read-only memory map
        of its file, unmapped when the caller drops it. Gathering words straight from the map costs no
        more than from memory (the rows were just written and sit in the page cache), and spares
        reading the layer into a buffer first."""
        matrix = self.matrices[layer]
        if not isinstance(matrix, np.memmap):
            return matrix
        try:
            return np.load(str(matrix.filename), mmap_mode="r")
        except ValueError as err:  # numpy: mmap length is greater than file size
            raise OutputError(
                f"{matrix.filename} is shorter than its header says ({err}); run again with --restart"
            ) from err

    def host_matrices(self) -> dict[int, np.ndarray]:
        """Every layer as a host array (in RAM, or a memory map of its file)."""
        return self.matrices

    def filled_per_word(self, offsets: np.ndarray) -> np.ndarray:
        """(n_words,) number of filled rows of each word."""
        cumulative = np.concatenate([[0], np.cumsum(self.filled, dtype=np.int64)])
        return cumulative[offsets[1:]] - cumulative[offsets[:-1]]

    def flush(self) -> None:
        """Make the written rows durable (before a checkpoint records :meth:`state`)."""
        row_bytes = self.dim * self.dtype.itemsize
        for i, (fd, offset) in enumerate(self._files.values()):
            if self.in_memory and self.count > self._saved:  # append the rows written since the last flush
                rows = self._host_rows(i, self._saved, self.count)
                self._pwrite(fd, memoryview(rows.data).cast("B"), offset + self._saved * row_bytes)
            os.fsync(fd)
        self._saved = self.count

    def _host_rows(self, i: int, start: int, end: int) -> np.ndarray:
        """Rows ``[start, end)`` of the ``i``-th layer as a contiguous host array (for the files)."""
        return np.ascontiguousarray(self.matrices[self.layers[i]][start:end])

    def close(self) -> None:
        """Close the files (the read-only maps stay usable); done anyway when the store is collected."""
        self._close()
        self._files.clear()

    def state(self) -> dict[str, np.ndarray]:
        """What a checkpoint keeps besides the matrices: rows filled and where they are."""
        return {"position": self.position, "filled": self.filled, "count": np.array(self.count)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Go on from a checkpoint's :meth:`state` (in memory: its rows are read back from the files)."""
        self.position = np.array(state["position"])
        self.filled = np.array(state["filled"])
        self.count = self._saved = int(state["count"])
        if not self.in_memory:
            return
        for i, layer in enumerate(self._files):
            try:
                saved = np.load(self._path(layer), mmap_mode="r")
            except (OSError, ValueError) as err:
                raise OutputError(f"the store file of layer {layer} is shorter than its checkpoint says ({err}); "
                                  "run again with --restart") from err  # fmt: skip
            self._load_rows(i, saved[: self.count])

    def _load_rows(self, i: int, rows: np.ndarray) -> None:
        """Put the checkpoint's rows of the ``i``-th layer (read from its file) in memory."""
        self._all[i, : len(rows)] = rows  # type: ignore[index]
