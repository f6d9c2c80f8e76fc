"""A tuning's checkpoint: after an epoch, the table and its map, their optimizers' state, the generator that
orders the batches and the best epoch so far, so that a tuning stopped part way goes on from there to the same
bytes. It is reused only when the digest of what the tuning was given (the start table, the sentences' rows,
the teacher's targets, the options that train, the device's kind) is the one it was saved with."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from distill.files import atomic_path
from distill.tune.options import TuneOptions

logger = logging.getLogger(__name__)

#: A running tuning saves after an epoch once this long has passed since its last save, and after its last epoch.
SAVE_SECONDS = 120.0


def inputs_digest(
    vectors: np.ndarray,
    ids: Sequence[np.ndarray],
    targets: np.ndarray,
    options: TuneOptions,
    train_only: int,
    device: torch.device,
) -> str:
    """sha256 of everything a tuning's result depends on; the blend is left out (it is applied afterwards)."""
    digest = hashlib.sha256()
    for array in (vectors, targets, np.array([len(i) for i in ids], dtype=np.int64)):
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).data)
    for rows in ids:
        digest.update(np.ascontiguousarray(rows, dtype=np.int64).data)
    trains = {k: v for k, v in options.to_json().items() if k != "blend"}
    digest.update(json.dumps({**trains, "train_only": train_only, "device": device.type}, sort_keys=True).encode())
    return digest.hexdigest()


def read_checkpoint(path: Path, digest: str, device: torch.device) -> dict[str, Any] | None:
    """The state saved at ``path`` when it was saved for inputs of this ``digest``; None when there is none, it
    is damaged or it is another tuning's (which then starts afresh). Tensors only: no code in it runs."""
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # truncated or not ours: torch raises several kinds
        logger.warning("the tuning's checkpoint %s cannot be read (%s): tuning afresh", path, err)
        return None
    if not isinstance(state, dict) or state.get("digest") != digest:
        logger.warning("the tuning's checkpoint %s is from other inputs: tuning afresh", path)
        return None
    logger.info("resuming the tuning after epoch %d from %s", state["epoch"], path)
    return state


def write_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Save ``state`` whole or not at all."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
