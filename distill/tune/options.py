"""How ``distill tune`` trains (light: read by the command line without torch)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class TuneOptions:
    epochs: int = 30
    learning_rate: float = 1e-3
    batch_size: int = 256
    held_out: float = 0.1  # share of sentences for early stopping
    patience: int = 3  # epochs without a better held-out loss before stopping
    blend: float = 0.5  # share of the trained change kept (1: the trained table itself)
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
