"""The occurrence store as one torch tensor on the encoding device: a GPU's memory when it fits there, pinned
host memory (filled by asynchronous copies) when it does not, plain memory on a CPU.

Pooled vectors never leave the device during encoding and the reduction reads them there; only the final
vectors come back to the host. Checkpoints append the rows written since the last one to the same
``layer{L}.npy`` files as :class:`~distill.encoding.store.OccurrenceStore`, so a resumed run reads them back.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from distill.encoding.store import OccurrenceStore

logger = logging.getLogger(__name__)

#: Share of a GPU's free memory the store may take; the rest is for the forward pass and the reduction.
DEVICE_SHARE = 0.6


def placement(nbytes: int, device: torch.device) -> tuple[torch.device, bool]:
    """Where a store of ``nbytes`` lives for an encoder on ``device``: (device, pinned host memory)."""
    if device.type != "cuda":
        return torch.device("cpu"), False
    free, _ = torch.cuda.mem_get_info(device)
    if nbytes <= DEVICE_SHARE * free:
        return device, False
    logger.info("the store (%.1f GB) does not fit in %.1f GB of free GPU memory: pinned host memory instead",
                nbytes / 1e9, free / 1e9)  # fmt: skip
    return torch.device("cpu"), True


class DeviceStore(OccurrenceStore):
    """:class:`OccurrenceStore` whose matrices are slices of one torch tensor (``self.tensor``)."""

    def __init__(
        self,
        directory: Path | None,
        layers: tuple[int, ...],
        n_rows: int,
        dim: int,
        dtype: np.dtype | str | type[np.floating] = np.float32,
        reopen: bool = False,
        device: torch.device | str = "cpu",
    ) -> None:
        self.device = torch.device(device)
        super().__init__(directory, layers, n_rows, dim, dtype, reopen=reopen, in_memory=True)

    def _allocate(self, shape: tuple[int, int, int]) -> None:
        dtype = getattr(torch, self.dtype.name)
        where, pinned = placement(int(np.prod(shape)) * self.dtype.itemsize, self.device)
        self.tensor = torch.zeros(shape, dtype=dtype, device=where, pin_memory=pinned)
        self.pinned = pinned
        self.matrices = {layer: self.tensor[i] for i, layer in enumerate(self.layers)}  # type: ignore[misc]
        logger.info("occurrence store on %s%s", where, " (pinned)" if pinned else "")

    def write(self, rows: np.ndarray, vectors: np.ndarray | torch.Tensor) -> None:
        """As :meth:`OccurrenceStore.write`; a tensor on the GPU is copied without waiting for it."""
        start, end = self._claim(rows)
        source = torch.as_tensor(vectors)
        self.tensor[:, start:end].copy_(source, non_blocking=source.device != self.tensor.device)

    def _settle(self) -> None:
        """Wait for the asynchronous copies into pinned host memory before the host reads it."""
        if self.pinned:
            torch.cuda.synchronize(self.device)

    def flush(self) -> None:
        self._settle()
        super().flush()

    def vectors(self, layer: int, rows: np.ndarray) -> np.ndarray:
        self._settle()
        index = torch.from_numpy(self.position[rows]).to(self.tensor.device)
        return self._tensor(layer).index_select(0, index).cpu().numpy()

    def layer(self, layer: int) -> torch.Tensor:  # type: ignore[override]
        """The whole matrix of ``layer`` (rows in ``position`` order), where it lives."""
        self._settle()
        return self._tensor(layer)

    def _tensor(self, layer: int) -> torch.Tensor:
        return self.tensor[self.layers.index(layer)]

    def host_matrices(self) -> dict[int, np.ndarray]:
        """Every layer as a host array (a copy from a GPU; a view on a CPU)."""
        self._settle()
        return {layer: self._tensor(layer).cpu().numpy() for layer in self.layers}

    def _host_rows(self, i: int, start: int, end: int) -> np.ndarray:
        return self.tensor[i, start:end].cpu().numpy()

    def _load_rows(self, i: int, rows: np.ndarray) -> None:
        self.tensor[i, : len(rows)].copy_(torch.from_numpy(np.array(rows)))  # a copy: the file's map is read-only
