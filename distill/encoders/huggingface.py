"""Hugging Face models behind the ``Encoder`` interface: local folders, hub ids and GGUF checkpoints, cut
after the highest requested layer. No code from a model folder or the hub ever runs."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from distill.encoders.alignment import Window, WindowTokenizer, truncating_backend
from distill.errors import ConfigError

logger = logging.getLogger(__name__)

#: Default window when neither the user nor the tokenizer gives a usable maximum.
DEFAULT_MAX_LENGTH = 512
#: Names of a final normalisation applied after the last layer (GPT-2, Llama, OPT).
_FINAL_NORMS = ("ln_f", "norm", "final_layer_norm")
#: The attention kernels a GPU forward may run: not cuDNN's, which builds a plan for each new batch shape, and
#: token-budget batches seldom repeat a shape (RESULTS.md, GPU path).
_GPU_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


@dataclass
class HuggingFaceEncoder:
    """The ``Encoder`` of a Hugging Face model: a fast tokenizer (offsets) and ``AutoModel`` (no LM head)."""

    name: str  # as the user gave it
    source: str  # hub id or local folder
    model: Any
    tokenizer: Any
    n_layers: int  # transformer layers; hidden states are 0..n_layers
    hidden_size: int
    max_length: int
    device: torch.device
    dtype: torch.dtype
    uncased: bool
    revision: str | None = None
    layers_run: int = 0  # transformer layers actually run
    unk_id: int | None = None  # the tokenizer's unknown piece, if it has one
    backends: dict[int, Any] = field(default_factory=dict, repr=False)  # truncating tokenizer per stride
    mask_kind: str | None = None  # on a GPU: the padded batches' mask (attention_mask_4d), once probed

    @property
    def attention(self) -> str | None:
        """The attention kernel transformers runs (sdpa, eager, flash_attention_2, ...)."""
        return getattr(self.model.config, "_attn_implementation", None)

    @property
    def vocab_size(self) -> int:
        """Number of piece ids (for per-piece statistics)."""
        return len(self.tokenizer)

    def tokenize(self, texts: list[str], stride: int) -> list[Window]:
        """Windows of at most ``max_length`` pieces, consecutive windows of a text sharing ``stride`` pieces."""
        return self.window_tokenizer(stride).tokenize(texts, stride)

    def window_tokenizer(self, stride: int) -> WindowTokenizer:
        """What tokenizing needs and nothing of the model: picklable, for a pool of worker processes."""
        if stride not in self.backends:
            self.backends[stride] = truncating_backend(self.tokenizer, self.max_length, stride)
        return WindowTokenizer(self.backends[stride], self.unk_id)

    def forward_padded(self, padded: np.ndarray, real: np.ndarray) -> tuple[torch.Tensor, ...]:
        """All hidden states of a right-padded batch: ``padded`` (B, T) piece ids, ``real`` (B, T) bool."""
        ids = torch.from_numpy(padded)
        if self.device.type != "cuda":
            return self._run(ids, torch.from_numpy(real).long())
        ids = ids.pin_memory().to(self.device, non_blocking=True)
        with sdpa_kernel(_GPU_ATTENTION):
            if real.all():  # no padding: no mask, as transformers itself drops an all-ones one
                return self._run(ids, None)
            mask = torch.from_numpy(real).pin_memory().to(self.device, non_blocking=True)
            return self._run(ids, self._gpu_mask(ids, mask))

    def _run(self, ids: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        output = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
        return cast(tuple[torch.Tensor, ...], output.hidden_states)

    def _gpu_mask(self, ids: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """The attention mask of a padded batch on a GPU, ``real`` (B, T) bool there.

        From a 2D mask, transformers asks the device whether any position is padded before it builds the 4D
        mask SDPA takes: the host waits for every batch to finish before it can queue the next. The 4D mask
        built here is used as given. Which one fits the model (each token sees every real token, or those
        before it) is found once, on the first padded batch, against the model's own mask; a model whose
        result neither reproduces keeps the 2D mask."""
        if self.mask_kind is None:
            self.mask_kind = probe_mask_kind(self, ids, real)
            logger.debug("GPU attention mask: %s", self.mask_kind)
        return attention_mask_4d(real, self.mask_kind)


#: The 4D masks a GPU forward may build itself: each token attends to every real token, or to the real tokens
#: up to itself; "2d" leaves the mask to transformers.
MASK_KINDS = ("bidirectional", "causal", "2d")


def attention_mask_4d(real: torch.Tensor, kind: str) -> torch.Tensor:
    """The (B, 1, T, T) boolean mask of ``kind`` (:data:`MASK_KINDS`) for a batch whose real positions are
    ``real`` (B, T) bool, as SDPA takes it (True: attend); for "2d", ``real`` as the model's 2D mask."""
    if kind == "2d":
        return real.long()
    batch, width = real.shape
    mask = real[:, None, None, :].expand(batch, 1, width, width)
    if kind == "causal":
        mask = mask & torch.ones(width, width, dtype=torch.bool, device=real.device).tril()
    return mask


def probe_mask_kind(encoder: HuggingFaceEncoder, ids: torch.Tensor, real: torch.Tensor) -> str:
    """Which 4D mask gives the model's own result (its last hidden state at the real positions) on the
    shortest and the longest window of a padded batch; "2d" when none does, or the model's attention is not
    SDPA (eager attention adds a float mask and never waits on the device)."""
    if encoder.attention != "sdpa":
        return "2d"
    lengths = real.sum(dim=1)
    rows = torch.stack([lengths.argmin(), lengths.argmax()])
    ids, real = ids[rows], real[rows]
    expected = encoder._run(ids, real.long())[-1].float()[real]
    scale = float(expected.abs().max()) or 1.0
    for kind in MASK_KINDS[:-1]:
        got = encoder._run(ids, attention_mask_4d(real, kind))[-1].float()[real]
        if float((got - expected).abs().max()) <= 1e-2 * scale:
            return kind
    return "2d"


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers quickly; False when HF_HUB_OFFLINE is set."""
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() not in {"0", "", "false", "no"}:
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((endpoint.hostname or "huggingface.co", endpoint.port or 443), timeout).close()
    except OSError:
        return False
    return True


#: What a damaged or unreadable checkpoint raises while loading (safetensors' error is no OSError).
_LOAD_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, RuntimeError, EOFError, KeyError)
try:
    from safetensors import SafetensorError

    _LOAD_ERRORS += (SafetensorError,)
except ImportError:  # pragma: no cover  (transformers depends on safetensors)
    pass


def _load_error(name: str, source: str, err: BaseException, where: str) -> ConfigError:
    """One line for a model that failed to load: remote code refused, damaged weights, or the reason."""
    reason = " ".join(str(err).split())
    if "custom code" in reason or "trust_remote_code" in reason:
        return ConfigError(
            f"model {name!r} ({source}) asks to run Python code shipped with it; distill never runs code from a "
            "model folder or the hub: use a model whose architecture transformers ships"
        )
    return ConfigError(f"cannot load model {name!r} {where}: {reason}")


def _from_pretrained(loader: Any, name: str, source: str, **kwargs: Any) -> Any:
    """Local folder or local cache first; the hub only when it answers; a clear error otherwise.
    ``trust_remote_code=False`` always: transformers then refuses a model that asks to run its own code,
    rather than asking on stdin."""
    is_local = Path(source).exists()
    kwargs["trust_remote_code"] = False
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except _LOAD_ERRORS as err:
        if is_local:
            raise _load_error(
                name, source, err, f"from the folder {source} (it needs config.json, weights and tokenizer files "
                "as save_pretrained writes them, undamaged)"
            ) from err  # fmt: skip
        if "custom code" in str(err):
            raise _load_error(name, source, err, "") from err
    if source.startswith(("/", "./", "../", "~")) or source.count("/") > 1 or "\\" in source:
        raise ConfigError(f"no model folder at {source}; give a folder that save_pretrained wrote, a hub id "
                          "(owner/name) or an alias (distill run --help lists them)")  # fmt: skip
    if not hub_reachable():
        raise ConfigError(
            f"model {name!r} ({source}) is not in the local Hugging Face cache and the hub cannot be "
            "reached (no network, or HF_HUB_OFFLINE=1). Download it where the hub is reachable "
            f"(`hf download {source}`) and copy the cache, or pass a local folder that save_pretrained wrote"
        )
    try:
        return loader.from_pretrained(source, **kwargs)
    except _LOAD_ERRORS as err:
        raise _load_error(name, source, err, f"({source}) from the hub") from err


def load_model_config(name: str, source: str, revision: str | None = None, gguf_file: str | None = None) -> Any:
    """The model's config alone (no weights), to check layers before anything heavy loads."""
    from transformers import AutoConfig

    if gguf_file and Path(source).is_dir() and not (Path(source) / gguf_file).is_file():
        raise ConfigError(f"--gguf-file {gguf_file} is not a file of the model folder {source}: give its name there, "
                          "or its full path")  # fmt: skip
    config = _from_pretrained(AutoConfig, name, source, revision=revision, gguf_file=gguf_file)
    if getattr(config, "num_hidden_layers", None) is None:
        raise ConfigError(f"model {name!r} has no num_hidden_layers in its config; it is not a transformer encoder")
    return config


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device} asked for, but torch sees no CUDA GPU; use --device auto or cpu")
    if device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ConfigError("device mps asked for, but this machine has no Apple GPU; use --device auto or cpu")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise ConfigError(f"device {device} asked for, but torch sees {torch.cuda.device_count()} GPU(s)")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]


def is_uncased(tokenizer: Any) -> bool:
    """True when the tokenizer lowercases its input (bert-base-uncased, MiniLM)."""
    probe = "The Quick Brown Fox Visits Paris"
    return tokenizer.tokenize(probe) == tokenizer.tokenize(probe.lower())


def _layer_list(model: torch.nn.Module, n_layers: int) -> tuple[torch.nn.Module, str]:
    """The ModuleList holding the transformer layers, and its attribute path."""
    found = [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers
    ]
    if not found:
        raise ConfigError(f"cannot find the {n_layers} transformer layers of {type(model).__name__}")
    name, module = min(found, key=lambda item: item[0].count("."))
    return module, name


def truncate_layers(model: torch.nn.Module, n_layers: int, keep: int) -> None:
    """Run only the first ``keep`` layers; ``hidden_states[0..keep]`` stay what the full model gives.

    A final norm that the full model applies after its last layer only (GPT-2's ``ln_f``, Llama's
    ``norm``) is switched off, because ``hidden_states[keep]`` of the full model is taken before it.
    """
    if keep >= n_layers:
        return
    layers, path = _layer_list(model, n_layers)
    parent = model.get_submodule(path.rsplit(".", 1)[0]) if "." in path else model
    setattr(parent, path.rsplit(".", 1)[-1], torch.nn.ModuleList(list(cast(torch.nn.ModuleList, layers))[:keep]))
    for norm in _FINAL_NORMS:
        if isinstance(getattr(parent, norm, None), torch.nn.Module):
            setattr(parent, norm, torch.nn.Identity())


@contextlib.contextmanager
def _bars(shown: bool) -> Iterator[None]:
    """transformers' progress bars off for the block unless ``shown``, as they were after it."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    if was and not shown:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was and not shown:
            hf_logging.enable_progress_bar()


def load_model(
    name: str,
    source: str,
    layers: tuple[int, ...],
    *,
    device: str = "auto",
    dtype: str = "auto",
    max_length: int | None = None,
    revision: str | None = None,
    gguf_file: str | None = None,
    config: Any = None,
    progress: bool = True,
) -> HuggingFaceEncoder:
    """Tokenizer and base model (no LM head), cut after the highest requested layer, in eval mode; ``progress``
    False: no transformers bar while the weights load (``distill.run(progress=False)``, ``--no-progress``)."""
    from transformers import AutoModel, AutoTokenizer

    config = config or load_model_config(name, source, revision, gguf_file)
    n_layers = int(config.num_hidden_layers)
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    tokenizer = _from_pretrained(AutoTokenizer, name, source, revision=revision, gguf_file=gguf_file)
    if not getattr(tokenizer, "is_fast", True):
        raise ConfigError(f"model {name!r} has no fast tokenizer (tokenizer.json); distill needs its offsets")
    check_tokenizer(name, tokenizer, config)
    with _bars(progress):
        model = _from_pretrained(AutoModel, name, source, revision=revision, gguf_file=gguf_file, dtype=torch_dtype)
    keep = max(1, max(layers))  # with no layer at all, transformers 5 records no hidden state
    truncate_layers(model, n_layers, keep)
    model.to(torch_device).eval()
    limit = max_length or _model_max_length(tokenizer, config)
    return HuggingFaceEncoder(
        name=name,
        source=source,
        model=model,
        tokenizer=tokenizer,
        n_layers=n_layers,
        hidden_size=int(config.hidden_size),
        max_length=limit,
        device=torch_device,
        dtype=torch_dtype,
        uncased=is_uncased(tokenizer),
        revision=revision or getattr(config, "_commit_hash", None),
        layers_run=min(keep, n_layers),
        unk_id=tokenizer.unk_token_id,
    )


def check_tokenizer(name: str, tokenizer: Any, config: Any) -> None:
    """Refuse a tokenizer that cannot be the model's: more pieces than the model has embeddings (ids past its
    table), or far fewer (a folder without its tokenizer files gets a stub that maps every word to the unknown
    token)."""
    embeddings = int(getattr(config, "vocab_size", 0) or 0)
    if embeddings and len(tokenizer) > embeddings:
        raise ConfigError(
            f"the tokenizer of {name!r} has {len(tokenizer):,} pieces but the model only {embeddings:,} embeddings: "
            "ids past its table cannot be read; its tokenizer files belong to another model"
        )
    if embeddings and len(tokenizer) < embeddings // 2:
        raise ConfigError(
            f"the tokenizer of {name!r} knows {len(tokenizer):,} pieces but the model has {embeddings:,} embeddings: "
            "its tokenizer files (tokenizer.json, vocab.txt ...) are missing or belong to another model"
        )


def _model_max_length(tokenizer: Any, config: Any) -> int:
    candidates = [DEFAULT_MAX_LENGTH]
    if 0 < getattr(tokenizer, "model_max_length", 0) < 1_000_000:
        candidates.append(int(tokenizer.model_max_length))
    if getattr(config, "max_position_embeddings", None):
        candidates.append(int(config.max_position_embeddings))
    return min(candidates)
