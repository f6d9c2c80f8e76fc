"""Static vectors for the model's own pieces, and vectors for out-of-vocabulary words built from them.

With ``--pieces`` a run also averages, per layer, the hidden state of every text token it encodes
by token id: ``layerL.pieces.npz`` holds ``vectors`` (n_pieces, d) and ``counts`` (n_pieces,). A word
without a vector then gets the mean of its pieces' vectors (pieces never seen are left out), the
pieces found with the model's tokenizer and character offsets, as in the distillation itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from distill.errors import ConfigError
from distill.files import atomic_path
from distill.rundir import RunDir, pieces_name


@dataclass
class PieceSums:
    """Running sum and count of the hidden states of each token id, per layer; fed batch by batch."""

    layers: tuple[int, ...]
    n_pieces: int
    dim: int
    sums: dict[int, torch.Tensor] = field(init=False)
    counts: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.sums = {layer: torch.zeros(self.n_pieces, self.dim, dtype=torch.float64) for layer in self.layers}
        self.counts = torch.zeros(self.n_pieces, dtype=torch.int64)

    def observe(
        self,
        hidden: Sequence[torch.Tensor],
        ids: torch.Tensor,
        content: torch.Tensor,
        fresh: torch.Tensor | None = None,
        sentences: Sequence[tuple[int, str, int]] | None = None,
    ) -> None:
        """Add each text token's hidden states to its id's sums, once per token of the sentence (``fresh``)."""
        mask = (fresh if fresh is not None else content).flatten()
        token_ids = ids.flatten()[mask]
        self.counts.index_add_(0, token_ids, torch.ones_like(token_ids))
        for layer in self.layers:
            states = hidden[layer].flatten(0, 1)[mask.to(hidden[layer].device)].double().cpu()
            self.sums[layer].index_add_(0, token_ids, states)

    def state(self) -> dict[str, np.ndarray]:
        return {"counts": self.counts.numpy(), **{f"sums{layer}": self.sums[layer].numpy() for layer in self.layers}}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        self.counts = torch.from_numpy(np.array(state["counts"]))
        self.sums = {layer: torch.from_numpy(np.array(state[f"sums{layer}"])) for layer in self.layers}

    def vectors(self, layer: int) -> np.ndarray:
        """(n_pieces, d) float32 means; zero for pieces never seen."""
        counts = self.counts.clamp(min=1).double()[:, None]
        return (self.sums[layer] / counts).float().numpy()

    def write(self, out: Path) -> list[Path]:
        files = []
        for layer in self.layers:
            path = out / pieces_name(layer)
            with atomic_path(path) as tmp, open(tmp, "wb") as handle:
                np.savez(handle, vectors=self.vectors(layer), counts=self.counts.numpy())
            files.append(path)
        return files


@dataclass
class PieceVectors:
    """OOV fallback: a word's vector as the mean of its pieces' static vectors."""

    tokenizer: Any
    vectors: np.ndarray  # (n_pieces, d)
    counts: np.ndarray  # (n_pieces,)
    lowercase: bool = False

    @classmethod
    def open(cls, run_dir: str | Path, layer: int) -> PieceVectors | None:
        """The run's piece vectors for ``layer`` and the model's tokenizer; None if the run made none."""

        run = RunDir(run_dir)
        path = run.path / pieces_name(layer)
        if not path.is_file():
            return None
        from transformers import AutoTokenizer

        manifest = run.manifest()
        model = manifest["model"]
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                model["source"], gguf_file=model.get("gguf_file"), trust_remote_code=False
            )
        except (OSError, ValueError) as err:
            raise ConfigError(
                f"cannot load the tokenizer of {manifest['model']['source']} for OOV words: {err}"
            ) from err
        data = np.load(path)
        return cls(tokenizer, data["vectors"], data["counts"], bool(manifest["vocabulary"]["lowercase"]))

    def pieces(self, word: str) -> list[int]:
        """Token ids of ``word`` as it appears after a space in running text (offsets, not string surgery)."""
        text = "a " + (word.lower() if self.lowercase else word)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [i for i, (start, end) in zip(enc["input_ids"], enc["offset_mapping"]) if end > 2 and start >= 1]

    def vector(self, word: str) -> np.ndarray | None:
        """Mean of the seen pieces' vectors; None when no piece of the word was ever seen."""
        ids = [i for i in self.pieces(word) if self.counts[i] > 0]
        return self.vectors[ids].mean(axis=0) if ids else None
