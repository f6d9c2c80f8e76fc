"""Load a contextual model and encode sampled word occurrences: one vector per occurrence and layer.

All requested layers come from one forward pass per batch; layers above the highest requested one
are not run at all.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import torch
from tqdm.auto import tqdm

from distill.alignment import Window, choose_windows, make_windows, piece_mask
from distill.config import ConfigError
from distill.occurrences import SentenceJob
from distill.store import OccurrenceStore

logger = logging.getLogger(__name__)

#: Default window when neither the user nor the tokenizer gives a usable maximum.
DEFAULT_MAX_LENGTH = 512
#: Names of a final normalisation applied after the last layer (GPT-2, Llama, OPT).
_FINAL_NORMS = ("ln_f", "norm", "final_layer_norm")


@dataclass
class LoadedModel:
    """A model ready to encode, with what the manifest records about it: the ``Encoder`` interface.

    A model family implements two methods (see ``distill/elmo.py`` for a non-Hugging-Face one):
    ``tokenize(texts, stride) -> list[Window]`` (pieces with character offsets, long texts split into
    windows) and ``forward(windows) -> (hidden states, width)`` (every layer, ``(B, width, hidden_size)``
    each, layer 0 = the input embedding). Alignment, pooling, reduction and export are shared.
    This class is the Hugging Face implementation (fast tokenizer + ``AutoModel``).
    """

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

    @property
    def vocab_size(self) -> int:
        """Number of piece ids (for per-piece statistics)."""
        return len(self.tokenizer)

    def tokenize(self, texts: list[str], stride: int) -> list[Window]:
        """Windows of at most ``max_length`` pieces, consecutive windows of a text sharing ``stride`` pieces."""
        encoding = self.tokenizer(
            texts,
            max_length=self.max_length,
            truncation=True,
            stride=stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return make_windows(encoding, len(texts))

    def forward(self, batch: list[Window]) -> tuple[tuple[torch.Tensor, ...], int]:
        """Right-padded forward pass; returns all hidden states and the padded length."""
        width = max(len(w.ids) for w in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, window in enumerate(batch):
            ids[i, : len(window.ids)] = torch.tensor(window.ids)
            mask[i, : len(window.ids)] = 1
        pin = self.device.type == "cuda"
        if pin:
            ids, mask = ids.pin_memory(), mask.pin_memory()
        output = self.model(
            input_ids=ids.to(self.device, non_blocking=pin),
            attention_mask=mask.to(self.device, non_blocking=pin),
            output_hidden_states=True,
            use_cache=False,
        )
        return output.hidden_states, width


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


def _from_pretrained(loader: Any, name: str, source: str, **kwargs: Any) -> Any:
    """Local folder or local cache first; the hub only when it answers; a clear error otherwise."""
    is_local = Path(source).exists()
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except (OSError, ValueError) as err:
        if is_local:
            raise ConfigError(
                f"cannot load model {name!r} from the folder {source}: {err}. The folder needs config.json, "
                "weights and tokenizer files as written by save_pretrained"
            ) from err
    if not hub_reachable():
        raise ConfigError(
            f"model {name!r} ({source}) is not in the local Hugging Face cache and the hub cannot be "
            "reached (no network, or HF_HUB_OFFLINE=1). Download it where the hub is reachable "
            f"(`hf download {source}`) and copy the cache, or point MODEL at a local folder, "
            "e.g. MODEL=minilm (../shared/models/all-MiniLM-L6-v2)"
        )
    try:
        return loader.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot load model {name!r} ({source}) from the hub: {err}") from err


def load_model_config(name: str, source: str, revision: str | None = None, gguf_file: str | None = None) -> Any:
    """The model's config alone (no weights), to check layers before anything heavy loads."""
    from transformers import AutoConfig

    from distill.elmo import elmo_config, elmo_files

    if elmo_files(source) is not None:
        return elmo_config(source)

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
    setattr(parent, path.rsplit(".", 1)[-1], torch.nn.ModuleList(list(layers)[:keep]))
    for norm in _FINAL_NORMS:
        if isinstance(getattr(parent, norm, None), torch.nn.Module):
            setattr(parent, norm, torch.nn.Identity())


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
) -> LoadedModel:
    """Tokenizer and base model (no LM head), cut after the highest requested layer, in eval mode."""
    from transformers import AutoModel, AutoTokenizer

    from distill.elmo import elmo_files, load_elmo

    if elmo_files(source) is not None:
        return load_elmo(name, source, resolve_device(device), max_length)

    config = config or load_model_config(name, source, revision, gguf_file)
    n_layers = int(config.num_hidden_layers)
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    tokenizer = _from_pretrained(AutoTokenizer, name, source, revision=revision, gguf_file=gguf_file)
    if not getattr(tokenizer, "is_fast", True):
        raise ConfigError(f"model {name!r} has no fast tokenizer (tokenizer.json); distill needs its offsets")
    model = _from_pretrained(AutoModel, name, source, revision=revision, gguf_file=gguf_file, dtype=torch_dtype)
    keep = max(1, max(layers))  # with no layer at all, transformers 5 records no hidden state
    truncate_layers(model, n_layers, keep)
    model.to(torch_device).eval()
    limit = max_length or _model_max_length(tokenizer, config)
    return LoadedModel(
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
    )


def _model_max_length(tokenizer: Any, config: Any) -> int:
    candidates = [DEFAULT_MAX_LENGTH]
    if 0 < getattr(tokenizer, "model_max_length", 0) < 1_000_000:
        candidates.append(int(tokenizer.model_max_length))
    if getattr(config, "max_position_embeddings", None):
        candidates.append(int(config.max_position_embeddings))
    return min(candidates)


@dataclass
class EncodeStats:
    """Counts and timings of the encoding stage."""

    sentences: int = 0
    windows: int = 0
    long_sentences: int = 0  # sentences split into several windows
    tokens: int = 0  # tokens through the model, special tokens included, padding excluded
    occurrences: int = 0  # occurrences written to the store
    not_aligned: int = 0  # occurrences with no piece in any window (dropped)
    forward_seconds: float = 0.0
    seconds: float = 0.0


@dataclass
class _Prepared:
    """A window to run and the occurrences to gather from it."""

    window: Window
    rows: np.ndarray  # (k,) store rows
    occ: np.ndarray  # (p,) occurrence index 0..k-1 of each (occurrence, piece) pair
    tok: np.ndarray  # (p,) token position of each pair
    weight: np.ndarray  # (p,) 1 / number of pieces of the occurrence


def _batched(items: Iterable[Any], n: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, n)):
        yield chunk


def prepare_chunk(model: LoadedModel, jobs: list[SentenceJob], stride: int, stats: EncodeStats) -> list[_Prepared]:
    """Tokenize a chunk of sentences into windows and align each occurrence to its pieces."""
    windows = model.tokenize([job.text for job in jobs], stride)
    stats.sentences += len(jobs)
    stats.windows += len(windows)
    stats.long_sentences += len(windows) - len({w.sentence for w in windows})
    sentence = np.concatenate([np.full(len(job.rows), i) for i, job in enumerate(jobs)])
    starts = np.concatenate([job.starts for job in jobs])
    ends = np.concatenate([job.ends for job in jobs])
    rows = np.concatenate([job.rows for job in jobs])
    chosen = choose_windows(windows, sentence, starts, ends)
    stats.not_aligned += int((chosen < 0).sum())
    prepared = []
    order = np.argsort(chosen, kind="stable")
    bounds = np.searchsorted(chosen[order], np.arange(len(windows) + 1))
    for i, window in enumerate(windows):
        idx = order[bounds[i] : bounds[i + 1]]
        if len(idx) == 0:
            continue
        mask = piece_mask(window, starts[idx], ends[idx])
        n_pieces = mask.sum(axis=1)
        ok = n_pieces > 0
        stats.not_aligned += int((~ok).sum())
        if not ok.any():
            continue
        occ, tok = np.nonzero(mask[ok])
        weight = (1.0 / n_pieces[ok])[occ].astype(np.float32)
        prepared.append(_Prepared(window, rows[idx][ok], occ, tok, weight))
    return prepared


def forward_hidden(model: LoadedModel, batch: list[Window]) -> tuple[tuple[torch.Tensor, ...], int]:
    """All hidden states of a batch of windows and the padded length (``model.forward``)."""
    return model.forward(batch)


def gather_occurrences(
    hidden: tuple[torch.Tensor, ...], layers: tuple[int, ...], batch: list[_Prepared], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean of each occurrence's pieces in every requested layer: (rows (k,), vectors (L, k, D))."""
    device = hidden[0].device
    shift = np.cumsum([0] + [len(p.rows) for p in batch[:-1]])
    occ = torch.from_numpy(np.concatenate([p.occ + s for p, s in zip(batch, shift)])).to(device)
    tok = torch.from_numpy(np.concatenate([p.tok + i * width for i, p in enumerate(batch)])).to(device)
    weight = torch.from_numpy(np.concatenate([p.weight for p in batch])).to(device)
    n_occ = int(shift[-1]) + len(batch[-1].rows)
    pooled = torch.zeros((len(layers), n_occ, hidden[0].shape[-1]), device=device)
    for i, layer in enumerate(layers):
        pieces = hidden[layer].flatten(0, 1)[tok].float() * weight[:, None]  # (p, D)
        pooled[i].index_add_(0, occ, pieces)
    return np.concatenate([p.rows for p in batch]), pooled.cpu().numpy()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetch(items: Iterable[Any], depth: int = 2) -> Iterator[Any]:
    """Iterate ``items`` in a background thread, up to ``depth`` ahead (tokenizers release the GIL).

    An exception in the producer is raised in the consumer; a consumer that stops early stops it.
    """
    buffer: queue.Queue[Any] = queue.Queue(maxsize=depth)
    done, stop = object(), threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        buffer.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            buffer.put(done)
        except BaseException as err:  # handed to the consumer, raised there
            buffer.put(_Failed(err))

    thread = threading.Thread(target=produce, name="distill-prefetch", daemon=True)
    thread.start()
    try:
        while (item := buffer.get()) is not done:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()


def iter_batches(
    model: LoadedModel,
    jobs: Iterable[SentenceJob],
    stats: EncodeStats,
    *,
    batch_size: int = 64,
    stride: int = 32,
    chunk_size: int = 4096,
) -> Iterator[list[_Prepared]]:
    """The batches the model runs: chunks of sentences tokenized into windows, length-sorted per chunk."""
    for chunk in _batched(jobs, chunk_size):
        prepared = prepare_chunk(model, chunk, stride, stats)
        prepared.sort(key=lambda p: len(p.window.ids))
        yield from _batched(prepared, batch_size)


def encode_occurrences(
    model: LoadedModel,
    jobs: Iterable[SentenceJob],
    layers: tuple[int, ...],
    store: OccurrenceStore,
    *,
    batch_size: int = 64,
    stride: int = 32,
    chunk_size: int = 4096,
    total: int | None = None,
    progress: bool = True,
    observers: Sequence[Any] = (),
) -> EncodeStats:
    """Fill the store: length-sorted batches of windows, one forward pass each, every layer at once.

    Each of ``observers`` (``analysis.IntraSentence``, ``pieces.PieceSums``) sees every batch:
    ``observe(hidden, ids (B, T), content (B, T) bool, fresh (B, T) bool)``; ``fresh`` leaves out the
    tokens a window shares with the previous window of the same sentence.
    """
    stats = EncodeStats()
    start = time.perf_counter()
    bar = tqdm(total=total, unit="occ", desc="encoding", disable=not progress, dynamic_ncols=True)
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)

    batches = iter_batches(model, jobs, stats, batch_size=batch_size, stride=stride, chunk_size=chunk_size)
    with torch.inference_mode():
        for batch in prefetch(batches, depth=2 * (chunk_size // batch_size)):  # up to two chunks ahead
            t0 = time.perf_counter()
            hidden, width = forward_hidden(model, [p.window for p in batch])
            sync()
            stats.forward_seconds += time.perf_counter() - t0
            rows, vectors = gather_occurrences(hidden, layers, batch, width)
            store.write(rows, vectors)
            if observers:
                ids = torch.zeros((len(batch), width), dtype=torch.long)
                content = torch.zeros((len(batch), width), dtype=torch.bool)
                fresh = torch.zeros((len(batch), width), dtype=torch.bool)
                for i, p in enumerate(batch):
                    ids[i, : len(p.window.ids)] = torch.tensor(p.window.ids)
                    content[i, : len(p.window.ids)] = torch.from_numpy(p.window.content)
                    fresh[i, : len(p.window.ids)] = torch.from_numpy(
                        p.window.fresh if p.window.fresh is not None else p.window.content
                    )
                for observer in observers:
                    observer.observe(hidden, ids, content, fresh)
            stats.occurrences += len(rows)
            stats.tokens += sum(len(p.window.ids) for p in batch)
            bar.update(len(rows))
            bar.set_postfix(tok_s=f"{stats.tokens / (time.perf_counter() - start):,.0f}", refresh=False)
    bar.close()
    stats.seconds = time.perf_counter() - start
    if stats.not_aligned:
        logger.warning("%d occurrences could not be aligned to any model piece and were dropped", stats.not_aligned)
    return stats
