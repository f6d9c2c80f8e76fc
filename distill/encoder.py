"""Encode sampled word occurrences: one vector per occurrence and layer.

All requested layers come from one forward pass per batch; layers above the highest requested one
are not run at all. Models are loaded by :mod:`distill.models` (re-exported here).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from distill.alignment import Window, choose_windows, piece_mask
from distill.models import (  # noqa: F401  (the loading API, where callers have always found it)
    DEFAULT_MAX_LENGTH,
    LoadedModel,
    hub_reachable,
    is_uncased,
    load_model,
    load_model_config,
    resolve_device,
    resolve_dtype,
    truncate_layers,
)
from distill.occurrences import SentenceJob
from distill.store import OccurrenceStore

logger = logging.getLogger(__name__)


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
    tok: np.ndarray  # (p,) token position of each (occurrence, piece) pair, each occurrence's pieces together
    pieces: np.ndarray  # (k,) number of pieces of each occurrence


def batched(items: Iterable[Any], n: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, n)):
        yield chunk


def prepare_chunk(model: LoadedModel, jobs: list[SentenceJob], stride: int, stats: EncodeStats) -> list[_Prepared]:
    """Tokenize a chunk of sentences into windows and align each occurrence to its pieces."""
    windows = model.tokenize([job.text for job in jobs], stride)
    stats.sentences += len(jobs)
    stats.windows += len(windows)
    stats.long_sentences += len(windows) - len({w.sentence for w in windows})
    sentence = np.repeat(np.arange(len(jobs)), [len(job.rows) for job in jobs])
    starts = np.concatenate([job.starts for job in jobs])
    ends = np.concatenate([job.ends for job in jobs])
    rows = np.concatenate([job.rows for job in jobs])
    chosen = choose_windows(windows, sentence, starts, ends)
    stats.not_aligned += int((chosen < 0).sum())
    prepared = []
    order = np.argsort(chosen, kind="stable")
    bounds = np.searchsorted(chosen[order], np.arange(len(windows) + 1)).tolist()
    for window, lo, hi in zip(windows, bounds[:-1], bounds[1:]):  # runs per window: kept lean
        if lo == hi:
            continue
        idx = order[lo:hi]
        mask = piece_mask(window, starts[idx], ends[idx])
        n_pieces = mask.sum(axis=1)
        if not n_pieces.all():  # occurrences with no piece: dropped and counted
            ok = n_pieces > 0
            stats.not_aligned += len(ok) - int(ok.sum())
            idx, mask, n_pieces = idx[ok], mask[ok], n_pieces[ok]
            if not len(idx):
                continue
        _, tok = mask.nonzero()  # row-major: each occurrence's pieces together
        prepared.append(_Prepared(window, rows[idx], tok, n_pieces))
    return prepared


def forward_hidden(model: LoadedModel, batch: list[Window]) -> tuple[tuple[torch.Tensor, ...], int]:
    """All hidden states of a batch of windows and the padded length (``model.forward``)."""
    return model.forward(batch)


def gather_occurrences(
    hidden: tuple[torch.Tensor, ...], layers: tuple[int, ...], batch: list[_Prepared], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean of each occurrence's pieces in every requested layer: (rows (k,), vectors (L, k, D)).

    One ``embedding_bag`` per layer (the pieces of an occurrence are one bag): 1.6x faster than
    indexing, weighting and ``index_add_``."""
    device = hidden[0].device
    tok = torch.from_numpy(np.concatenate([p.tok + i * width for i, p in enumerate(batch)])).to(device)
    sizes = np.concatenate([p.pieces for p in batch])
    starts = torch.from_numpy(np.cumsum(sizes) - sizes).to(device)
    pooled = torch.empty((len(layers), len(sizes), hidden[0].shape[-1]), device=device)
    for i, layer in enumerate(layers):
        table = hidden[layer].flatten(0, 1).float()  # half precision: averaged in float32
        pooled[i] = torch.nn.functional.embedding_bag(tok, table, starts, mode="mean")
    return np.concatenate([p.rows for p in batch]), pooled.cpu().numpy()


def observe_batch(
    observers: Sequence[Any], hidden: tuple[torch.Tensor, ...], batch: list[_Prepared], width: int
) -> None:
    """Show a batch to each observer: ``observe(hidden, ids, content, fresh)``, (B, T) each."""
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    content = torch.zeros((len(batch), width), dtype=torch.bool)
    fresh = torch.zeros((len(batch), width), dtype=torch.bool)
    for i, p in enumerate(batch):
        n = len(p.window.ids)
        ids[i, :n] = torch.tensor(p.window.ids)
        content[i, :n] = torch.from_numpy(p.window.content)
        fresh[i, :n] = torch.from_numpy(p.window.fresh if p.window.fresh is not None else p.window.content)
    for observer in observers:
        observer.observe(hidden, ids, content, fresh)


@contextlib.contextmanager
def _interrupt_between_batches() -> Iterator[threading.Event]:
    """Ctrl-C (SIGINT) during encoding stops at the next batch, not inside a kernel or a finalizer,
    where a KeyboardInterrupt can be swallowed; a second Ctrl-C stops at once."""
    interrupted = threading.Event()
    installable = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if installable else None
    if previous is not signal.default_int_handler:  # ignored, or someone else's handler: leave it
        yield interrupted
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


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


@dataclass(frozen=True)
class ChunkDone:
    """Marker that follows the last batch of chunk ``index`` (0-based) in :func:`iter_batches`."""

    index: int


def iter_batches(
    model: LoadedModel,
    jobs: Iterable[SentenceJob],
    stats: EncodeStats,
    *,
    batch_size: int = 64,
    stride: int = 32,
    chunk_size: int = 4096,
    skip_chunks: int = 0,
) -> Iterator[list[_Prepared] | ChunkDone]:
    """The batches the model runs: chunks of sentences tokenized into windows, length-sorted per chunk.

    Each chunk's batches are followed by a :class:`ChunkDone`. The first ``skip_chunks`` chunks (done
    before a checkpoint) are walked but not tokenized.
    """
    for index, chunk in enumerate(batched(jobs, chunk_size)):
        if index >= skip_chunks:
            prepared = prepare_chunk(model, chunk, stride, stats)
            prepared.sort(key=lambda p: len(p.window.ids))
            yield from batched(prepared, batch_size)
        yield ChunkDone(index)


def encode_batch(
    model: LoadedModel,
    layers: tuple[int, ...],
    batch: list[_Prepared],
    stats: EncodeStats,
    observers: Sequence[Any] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """One forward pass: each occurrence's vectors in every layer (rows (k,), vectors (L, k, D)), shown to
    the observers; tokens, occurrences and forward time are added to ``stats``."""
    t0 = time.perf_counter()
    hidden, width = forward_hidden(model, [p.window for p in batch])
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    stats.forward_seconds += time.perf_counter() - t0
    rows, vectors = gather_occurrences(hidden, layers, batch, width)
    if observers:
        observe_batch(observers, hidden, batch, width)
    stats.occurrences += len(rows)
    stats.tokens += sum(len(p.window.ids) for p in batch)
    return rows, vectors


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
    stats: EncodeStats | None = None,
    skip_chunks: int = 0,
    on_chunk: Callable[[int, EncodeStats], None] | None = None,
) -> EncodeStats:
    """Fill the store: length-sorted batches of windows, one forward pass each, every layer at once.

    Each of ``observers`` (``analysis.IntraSentence``, ``pieces.PieceSums``) sees every batch:
    ``observe(hidden, ids (B, T), content (B, T) bool, fresh (B, T) bool)``; ``fresh`` leaves out the
    tokens a window shares with the previous window of the same sentence. To go on from a
    checkpoint, pass its ``stats`` and the number of chunks it had done (``skip_chunks``);
    ``on_chunk(chunks_done, stats)`` is called once each chunk is in the store.
    """
    stats = stats if stats is not None else EncodeStats()
    start = time.perf_counter() - stats.seconds
    tokens_before = stats.tokens
    bar = tqdm(total=total, initial=stats.occurrences, unit="occ", desc="encoding", disable=not progress,
               dynamic_ncols=True)  # fmt: skip
    batches = iter_batches(
        model, jobs, stats, batch_size=batch_size, stride=stride, chunk_size=chunk_size, skip_chunks=skip_chunks
    )
    resumed = time.perf_counter()
    with torch.inference_mode(), _interrupt_between_batches() as interrupted:
        for batch in prefetch(batches, depth=2 * (chunk_size // batch_size)):  # up to two chunks ahead
            if interrupted.is_set():
                raise KeyboardInterrupt
            if isinstance(batch, ChunkDone):
                if on_chunk is not None and batch.index >= skip_chunks:
                    stats.seconds = time.perf_counter() - start
                    on_chunk(batch.index + 1, stats)
                continue
            rows, vectors = encode_batch(model, layers, batch, stats, observers)
            store.write(rows, vectors)
            bar.update(len(rows))
            rate = (stats.tokens - tokens_before) / (time.perf_counter() - resumed)
            bar.set_postfix(tok_s=f"{rate:,.0f}", refresh=False)
    bar.close()
    stats.seconds = time.perf_counter() - start
    if stats.not_aligned:
        logger.warning("%d occurrences could not be aligned to any model piece and were dropped", stats.not_aligned)
    return stats
