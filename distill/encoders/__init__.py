"""Contextual models behind one interface, :class:`Encoder`: tokenize texts into windows with character
offsets, and run windows to every layer's hidden states. A new model family is one module here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from distill.encoders.alignment import Window

if TYPE_CHECKING:  # torch loads with the model, not with this package: a tokenizing worker never imports it
    import numpy as np
    import torch


class Encoder(Protocol):
    """A loaded model, ready to encode, with what the manifest records about it."""

    name: str  # as the user gave it
    source: str  # hub id or local folder
    n_layers: int  # transformer layers; hidden states are 0..n_layers
    hidden_size: int
    max_length: int  # pieces per window
    device: torch.device
    dtype: torch.dtype
    uncased: bool
    revision: str | None
    layers_run: int  # transformer layers actually run
    unk_id: int | None  # the unknown piece (occurrences that are only this piece are counted), if any

    @property
    def vocab_size(self) -> int | None:
        """Number of piece ids (for per-piece statistics); None when the model has no fixed piece vocabulary."""

    def tokenize(self, texts: list[str], stride: int) -> list[Window]:
        """Windows of at most ``max_length`` pieces, consecutive windows of a text sharing ``stride`` pieces."""

    def forward_padded(self, padded: np.ndarray, real: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Every hidden state, ``(B, T, hidden_size)`` each, of a batch already padded: ``padded`` (B, T) ids,
        ``real`` (B, T) bool (:func:`~distill.encoders.alignment.pad_windows` gives both)."""


def is_causal(model_config: Any) -> bool:
    """Whether a model reads text left to right only (GPT-2, Llama, SmolLM2), from its config: one made a
    decoder, or of a type transformers has a causal LM of and no masked LM (BERT-like encoders have both).
    ELMo's config has no type: it reads both ways."""
    if getattr(model_config, "is_decoder", False):
        return True
    kind = getattr(model_config, "model_type", None)
    if kind is None:
        return False
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    return kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and kind not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def is_elmo(source: str | Path) -> bool:
    """Whether ``source`` is a folder with ELMo's ``options.json`` and weights."""
    from distill.encoders.elmo import elmo_files

    return elmo_files(source) is not None


def load_encoder_config(name: str, source: str, revision: str | None = None, gguf_file: str | None = None) -> Any:
    """The model's config alone (no weights), to check layers before anything heavy loads."""
    if is_elmo(source):
        from distill.encoders.elmo import elmo_config

        return elmo_config(source)
    from distill.encoders.huggingface import load_model_config

    return load_model_config(name, source, revision, gguf_file)


def load_encoder(
    name: str, source: str, layers: tuple[int, ...], *, device: str = "auto", max_length: int | None = None,
    **options: Any,
) -> Encoder:  # fmt: skip
    """The encoder for ``source``: an ELMo folder, else a Hugging Face folder or hub id (GGUF too);
    ``options`` (dtype, revision, gguf_file, config) go to :func:`distill.encoders.huggingface.load_model`."""
    from distill.encoders.huggingface import load_model, resolve_device

    if is_elmo(source):
        from distill.encoders.elmo import load_elmo

        return load_elmo(name, source, resolve_device(device), max_length)
    return load_model(name, source, layers, device=device, max_length=max_length, **options)
