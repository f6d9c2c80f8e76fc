"""The local encoding engine: batches from a background thread, one forward pass each, into the store."""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

import torch

from distill.config import token_budget
from distill.encoders import Encoder
from distill.encoding.batches import (
    Batch,
    ChunkDone,
    EncodeStats,
    ForwardTimer,
    Observer,
    encode_batch,
    iter_batches,
)
from distill.encoding.store import OccurrenceStore
from distill.encoding.workers import given_or_own_pool
from distill.occurrences import SentenceJob
from distill.parallel import WorkerPool
from distill.progress import progress_bar

logger = logging.getLogger(__name__)


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


def per_chunk(items: Iterable[Batch | ChunkDone]) -> Iterator[list[Any]]:
    """Each chunk's batches and its :class:`ChunkDone` as one item, so that read-ahead counts chunks: a
    chunk is 64 batches of 64 sentences, or a few of a GPU's token budget."""
    group: list[Any] = []
    for item in items:
        group.append(item)
        if isinstance(item, ChunkDone):
            yield group
            group = []
    if group:
        yield group


def encode_occurrences(
    model: Encoder,
    jobs: Iterable[SentenceJob],
    layers: tuple[int, ...],
    store: OccurrenceStore,
    *,
    batch_size: int = 64,
    batch_tokens: int | None = None,
    workers: int | None = None,
    pool: WorkerPool | None = None,
    stride: int = 32,
    chunk_size: int = 4096,
    total: int | None = None,
    progress: bool = True,
    observers: Sequence[Observer] = (),
    stats: EncodeStats | None = None,
    skip_chunks: int = 0,
    on_chunk: Callable[[int, EncodeStats], None] | None = None,
    context_share: float = 0.0,
) -> EncodeStats:
    """Fill the store: length-sorted batches of windows, one forward pass each, every layer at once.

    Each of ``observers`` (``analysis.IntraSentence``, ``pieces.PieceSums``) sees every batch:
    ``observe(hidden, ids (B, T), content (B, T) bool, fresh (B, T) bool)``; ``fresh`` leaves out the
    tokens a window shares with the previous window of the same sentence. To go on from a
    checkpoint, pass its ``stats`` and the number of chunks it had done (``skip_chunks``).
    ``batch_tokens`` and ``workers`` are the options: None takes the device's default (:func:`token_budget`,
    :func:`default_workers`), ``batch_tokens`` 0 batches by ``batch_size``; a ``pool`` already started (the
    run's) tokenizes instead of ``workers`` processes started here;
    ``on_chunk(chunks_done, stats)`` is called once each chunk is in the store; ``context_share``: see
    :func:`~distill.encoding.batches.gather_occurrences`. Nothing here waits for a GPU per batch: vectors go to
    the store on the device, forward time is read from CUDA events.
    """
    stats = stats if stats is not None else EncodeStats()
    timer, forward_before = ForwardTimer(model.device), stats.forward_seconds
    batch_tokens = token_budget(batch_tokens, model.device)
    start = time.perf_counter() - stats.seconds
    bar = progress_bar(total, "encoding", "occ", not progress, initial=stats.occurrences)
    with given_or_own_pool(pool, workers, model.device.type) as pool:
        batches = iter_batches(model, jobs, batch_size=batch_size, stride=stride, chunk_size=chunk_size,
                               skip_chunks=skip_chunks, batch_tokens=batch_tokens, pool=pool)  # fmt: skip
        stats = _run_batches(model, layers, store, batches, stats, observers, timer, skip_chunks, on_chunk, bar,
                             context_share)  # fmt: skip
    bar.close()
    stats.forward_seconds = forward_before + timer.seconds()
    stats.seconds = time.perf_counter() - start
    if stats.not_aligned:
        logger.warning("%d occurrences could not be aligned to any model piece and were dropped", stats.not_aligned)
    return stats


def _run_batches(
    model: Encoder,
    layers: tuple[int, ...],
    store: OccurrenceStore,
    batches: Iterable[Batch | ChunkDone],
    stats: EncodeStats,
    observers: Sequence[Observer],
    timer: ForwardTimer,
    skip_chunks: int,
    on_chunk: Callable[[int, EncodeStats], None] | None,
    bar: Any,
    context_share: float = 0.0,
) -> EncodeStats:
    """Each batch through the model into the store; each chunk's counts added once it is in."""
    start, forward_before = time.perf_counter() - stats.seconds, stats.forward_seconds - timer.seconds(wait=False)
    tokens_before, resumed = stats.tokens, time.perf_counter()
    with torch.inference_mode(), _interrupt_between_batches() as interrupted:
        for batch in chain.from_iterable(prefetch(per_chunk(batches), depth=2)):  # up to two chunks ahead
            if interrupted.is_set():
                raise KeyboardInterrupt
            if isinstance(batch, ChunkDone):
                stats.add(batch.counts)
                if on_chunk is not None and batch.index >= skip_chunks:
                    stats.seconds = time.perf_counter() - start
                    stats.forward_seconds = forward_before + timer.seconds(wait=False)
                    on_chunk(batch.index + 1, stats)
                continue
            rows, vectors = encode_batch(model, layers, batch, stats, observers, timer, context_share)
            store.write(rows, vectors)
            bar.update(len(rows))
            rate = (stats.tokens - tokens_before) / (time.perf_counter() - resumed)
            bar.set_postfix(tok_s=f"{rate:,.0f}", refresh=False)
    return stats
