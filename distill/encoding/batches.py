"""The batches the model runs, and what comes out of one: each sampled occurrence's vector in every layer.

Sentences are tokenized into windows a chunk at a time, each occurrence aligned to its pieces,
windows length-sorted and batched; one forward pass gives every requested layer, and the pieces of
each occurrence are averaged. Observers (:class:`Observer`) see every batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from distill.encoders import Encoder
from distill.encoders.alignment import pad_windows
from distill.encoding.prepare import EncodeStats, PreparedWindow, prepare_chunk
from distill.encoding.workers import prepared_chunks
from distill.iterate import batched
from distill.occurrences import SentenceJob
from distill.parallel import WorkerPool

__all__ = ["EncodeStats", "PreparedWindow", "prepare_chunk"]  # re-exported: where callers look for them


class Observer(Protocol):
    """Sees every batch the encoder runs (``IntraSentence``, ``PieceSums``); its sums go into checkpoints."""

    def observe(
        self,
        hidden: Sequence[torch.Tensor],
        ids: torch.Tensor,
        content: torch.Tensor,
        fresh: torch.Tensor,
        sentences: Sequence[tuple[int, str, int]] | None = None,
    ) -> None:
        """``hidden``: every hidden state; ``ids``, ``content``, ``fresh``: (B, T); ``fresh`` leaves out the
        tokens a window shares with the previous window of the same sentence; ``sentences``: each window's
        sentence id and text, and its number of tokens."""

    def state(self) -> dict[str, np.ndarray]: ...

    def load_state(self, state: dict[str, np.ndarray]) -> None: ...


class MergingObserver(Observer, Protocol):
    """An observer whose sums can be split across workers (the Ray engine): each worker fills an empty copy,
    whose state is merged back."""

    def empty(self) -> MergingObserver:
        """A new observer like this one, with no sums."""

    def merge(self, state: dict[str, np.ndarray]) -> None:
        """Add the sums of another observer's :meth:`state`."""


def token_batches(prepared: Sequence[PreparedWindow], budget: int) -> Iterator[list[PreparedWindow]]:
    """Length-sorted windows cut into batches of at most ``budget`` padded tokens (a window longer than the
    budget runs alone): a GPU needs tens of thousands of tokens per kernel launch, not 64 short sentences."""
    batch: list[PreparedWindow] = []
    for p in prepared:
        width = len(p.window.ids)  # the longest so far: windows come sorted by length
        if batch and (len(batch) + 1) * width > budget:
            yield batch
            batch = []
        batch.append(p)
    if batch:
        yield batch


class ForwardTimer:
    """Time spent in forward passes: wall clock on a CPU; on a GPU, CUDA events, read without waiting for
    the device until the end (:meth:`seconds`), so no batch waits to be timed."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.done = 0.0
        self.pending: list[tuple[Any, Any]] = []
        self.started = 0.0

    def start(self) -> None:
        if self.cuda:
            self.pending.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
            self.pending[-1][0].record()
        else:
            self.started = time.perf_counter()

    def stop(self) -> None:
        if self.cuda:
            self.pending[-1][1].record()
        else:
            self.done += time.perf_counter() - self.started

    def seconds(self, wait: bool = True) -> float:
        """Forward time so far: the passes the GPU has finished, or, with ``wait``, all of them."""
        if wait and self.pending:
            self.pending[-1][1].synchronize()
        finished = 0
        for start, end in self.pending:  # passes finish in the order they were recorded
            if not end.query():
                break
            self.done += start.elapsed_time(end) / 1000
            finished += 1
        del self.pending[:finished]
        return self.done


def gather_occurrences(
    hidden: tuple[torch.Tensor, ...], layers: tuple[int, ...], batch: list[PreparedWindow], width: int
) -> tuple[np.ndarray, torch.Tensor]:
    """Mean of each occurrence's pieces in every requested layer: (rows (k,), vectors (L, k, D)) with the
    vectors left on the model's device (a GPU's store takes them there; nothing waits for the device).

    One ``embedding_bag`` per layer (the pieces of an occurrence are one bag): one
    kernel instead of indexing, weighting and ``index_add_``."""
    device = hidden[0].device
    pin = device.type == "cuda"
    tok = torch.from_numpy(np.concatenate([p.tok + i * width for i, p in enumerate(batch)]))
    sizes = np.concatenate([p.pieces for p in batch])
    starts = torch.from_numpy(np.cumsum(sizes) - sizes)
    if pin:
        tok, starts = tok.pin_memory(), starts.pin_memory()
    tok, starts = tok.to(device, non_blocking=pin), starts.to(device, non_blocking=pin)
    pooled = torch.empty((len(layers), len(sizes), hidden[0].shape[-1]), device=device)
    for i, layer in enumerate(layers):
        table = hidden[layer].flatten(0, 1).float()  # half precision: averaged in float32
        pooled[i] = torch.nn.functional.embedding_bag(tok, table, starts, mode="mean")
    return np.concatenate([p.rows for p in batch]), pooled


def observe_batch(
    observers: Sequence[Observer], hidden: tuple[torch.Tensor, ...], batch: list[PreparedWindow], width: int
) -> None:
    """Show a batch to each observer: ``observe(hidden, ids, content, fresh)``, (B, T) each."""
    windows = [p.window for p in batch]
    padded, real = pad_windows(windows)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    ids[:, : padded.shape[1]] = torch.from_numpy(padded)
    content = torch.zeros((len(batch), width), dtype=torch.bool)
    fresh = torch.zeros((len(batch), width), dtype=torch.bool)
    content[:, : real.shape[1]][torch.from_numpy(real)] = torch.from_numpy(np.concatenate([w.content for w in windows]))
    fresh[:, : real.shape[1]][torch.from_numpy(real)] = torch.from_numpy(
        np.concatenate([w.new_content for w in windows])
    )
    sentences = [(*p.sentence, len(p.window.ids)) for p in batch]
    for observer in observers:
        observer.observe(hidden, ids, content, fresh, sentences)


@dataclass(frozen=True)
class ChunkDone:
    """Follows the last batch of chunk ``index`` (0-based) in :func:`iter_batches`, with what tokenizing the
    chunk counted (sentences, windows, unaligned and unknown occurrences). The consumer adds them when it
    has encoded the chunk, so a checkpoint never counts chunks that were tokenized ahead but not encoded."""

    index: int
    counts: EncodeStats


def iter_batches(
    model: Encoder,
    jobs: Iterable[SentenceJob],
    *,
    batch_size: int = 64,
    stride: int = 32,
    chunk_size: int = 4096,
    skip_chunks: int = 0,
    batch_tokens: int | None = None,
    pool: WorkerPool | None = None,
) -> Iterator[list[PreparedWindow] | ChunkDone]:
    """The batches the model runs: chunks of sentences tokenized into windows, length-sorted per chunk, cut
    into batches of ``batch_size`` windows or, with ``batch_tokens``, of at most that many padded tokens.

    Each chunk's batches are followed by a :class:`ChunkDone`. The first ``skip_chunks`` chunks (done
    before a checkpoint) are walked but not tokenized. With a ``pool``, chunks are tokenized and aligned in its
    worker processes (:mod:`distill.encoding.workers`).
    """
    chunks = (chunk if index >= skip_chunks else None for index, chunk in enumerate(batched(jobs, chunk_size)))
    for index, (prepared, counts) in enumerate(prepared_chunks(model, chunks, stride, pool)):
        yield from token_batches(prepared, batch_tokens) if batch_tokens else batched(prepared, batch_size)
        yield ChunkDone(index, counts)


def encode_batch(
    model: Encoder,
    layers: tuple[int, ...],
    batch: list[PreparedWindow],
    stats: EncodeStats,
    observers: Sequence[Observer] = (),
    timer: ForwardTimer | None = None,
) -> tuple[np.ndarray, torch.Tensor]:
    """One forward pass: each occurrence's vectors in every layer (rows (k,), vectors (L, k, D) on the
    model's device), shown to the observers; tokens, occurrences and forward time are added to ``stats``
    (with a ``timer``, forward time is left to the caller to read from it)."""
    own = timer is None
    timer = timer or ForwardTimer(model.device)
    timer.start()
    hidden, width = model.forward([p.window for p in batch])
    timer.stop()
    if own:
        stats.forward_seconds += timer.seconds()
    rows, vectors = gather_occurrences(hidden, layers, batch, width)
    if observers:
        observe_batch(observers, hidden, batch, width)
    stats.occurrences += len(rows)
    stats.tokens += sum(len(p.window.ids) for p in batch)
    return rows, vectors
