"""How ``distill tune`` trains (light: read by the command line without torch)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from distill.errors import ConfigError

LOSSES = ("cosine", "mse", "contrastive", "relational")
MODEL_BAGS = 50_000  # bags of words distill model tunes on beside the corpus sentences (--teacher-bags)
MODEL_BAG_TOPICS = 0.5  # the share of each of those bags drawn from its seed word's nearest words (--bag-topics)


@dataclass(frozen=True)
class TuneOptions:
    epochs: int = 30
    learning_rate: float = 1e-3
    batch_size: int = 256
    held_out: float = 0.1  # share of sentences for early stopping
    patience: int = 3  # epochs without a better held-out loss before stopping
    blend: float = 0.5  # share of the trained change kept (1: the trained table itself)
    seed: int = 0
    loss: str = "cosine"  # one of LOSSES (train.py says what each compares)
    temperature: float = 0.05  # of the contrastive loss
    shared_map: bool = True  # also train one linear map of every row: words no sentence holds move with the rest
    bags: bool = True  # also train on the bags of words the run kept (--teacher-bags); False: its sentences alone

    def __post_init__(self) -> None:
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ConfigError(f"--learning-rate must be a positive number, not {self.learning_rate}")
        if not (math.isfinite(self.blend) and 0 <= self.blend <= 1):
            raise ConfigError(f"--blend must be between 0 and 1, not {self.blend}")
        if not 0 < self.held_out < 1:
            raise ConfigError(f"the held-out share must be between 0 and 1, not {self.held_out}")
        if self.loss not in LOSSES:
            raise ConfigError(f"--loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ConfigError(f"the temperature must be a positive number, not {self.temperature}")
        if min(self.epochs, self.batch_size) < 1 or self.patience < 1 or self.seed < 0:
            raise ConfigError("epochs, batch size and patience must be at least 1, the seed at least 0")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
