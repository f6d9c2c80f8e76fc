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
from distill.encoding.prepare import Batch, EncodeStats, PreparedWindow, make_batch, prepare_chunk, token_batches
from distill.encoding.workers import Batching, prepared_batches
from distill.iterate import batched
from distill.occurrences import SentenceJob
from distill.parallel import WorkerPool

__all__ = ["Batch", "EncodeStats", "PreparedWindow", "make_batch", "prepare_chunk", "token_batches"]  # re-exported


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
    hidden: tuple[torch.Tensor, ...], layers: tuple[int, ...], batch: Batch, context_share: float = 0.0
) -> tuple[np.ndarray, torch.Tensor]:
    """Mean of each occurrence's pieces in every requested layer: (rows (k,), vectors (L, k, D)) with the
    vectors left on the model's device (a GPU's store takes them there; nothing waits for the device). With
    ``context_share`` S, S times the mean of its window's text tokens is added to each (``--context-share``).

    One ``embedding_bag`` per layer (the pieces of an occurrence are one bag): one
    kernel instead of indexing, weighting and ``index_add_``."""
    device = hidden[0].device
    pin = device.type == "cuda"
    host_starts = np.cumsum(batch.pieces) - batch.pieces
    tok, starts = torch.from_numpy(batch.tok), torch.from_numpy(host_starts)
    if context_share:  # each occurrence's window (batch row), that of its first piece, and the windows' text
        windows = torch.from_numpy(batch.tok[host_starts] // batch.ids.shape[1])
        content = torch.from_numpy(batch.content)
        if pin:
            windows, content = windows.pin_memory(), content.pin_memory()
        windows, content = windows.to(device, non_blocking=pin), content.to(device, non_blocking=pin).float()
        counts = content.sum(dim=1).clamp(min=1)[:, None]  # a window without text tokens: a zero mean
    if pin:
        tok, starts = tok.pin_memory(), starts.pin_memory()
    tok, starts = tok.to(device, non_blocking=pin), starts.to(device, non_blocking=pin)
    pooled = torch.empty((len(layers), len(batch.pieces), hidden[0].shape[-1]), device=device)
    for i, layer in enumerate(layers):
        table = hidden[layer].flatten(0, 1).float()  # half precision: averaged in float32
        pooled[i] = torch.nn.functional.embedding_bag(tok, table, starts, mode="mean")
        if context_share:
            means = torch.einsum("bt,btd->bd", content, table.view(*content.shape, -1)) / counts
            pooled[i] += context_share * means[windows]
    return batch.rows, pooled


def observe_batch(observers: Sequence[Observer], hidden: tuple[torch.Tensor, ...], batch: Batch) -> None:
    """Show a batch to each observer: ``observe(hidden, ids, content, fresh)``, (B, T) host tensors each."""
    ids, content, fresh = (torch.from_numpy(a) for a in (batch.ids, batch.content, batch.fresh))
    sentences = batch.sentences()
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
) -> Iterator[Batch | ChunkDone]:
    """The batches the model runs: chunks of sentences tokenized into windows, length-sorted per chunk, cut
    into batches of ``batch_size`` windows or, with ``batch_tokens``, of at most that many padded tokens.

    Each chunk's batches are followed by a :class:`ChunkDone`. The first ``skip_chunks`` chunks (done
    before a checkpoint) are walked but not tokenized. With a ``pool``, chunks are tokenized, aligned and cut in
    its worker processes (:mod:`distill.encoding.workers`).
    """
    chunks = (chunk if index >= skip_chunks else None for index, chunk in enumerate(batched(jobs, chunk_size)))
    batching = Batching(batch_size, batch_tokens)
    for index, (batches, counts) in enumerate(prepared_batches(model, chunks, stride, batching, pool)):
        yield from batches
        yield ChunkDone(index, counts)


def encode_batch(
    model: Encoder,
    layers: tuple[int, ...],
    batch: Batch,
    stats: EncodeStats,
    observers: Sequence[Observer] = (),
    timer: ForwardTimer | None = None,
    context_share: float = 0.0,
) -> tuple[np.ndarray, torch.Tensor]:
    """One forward pass: each occurrence's vectors in every layer (rows (k,), vectors (L, k, D) on the
    model's device; ``context_share``: :func:`gather_occurrences`), shown to the observers; tokens, occurrences
    and forward time are added to ``stats`` (with a ``timer``, forward time is left to the caller to read from
    it)."""
    own = timer is None
    timer = timer or ForwardTimer(model.device)
    timer.start()
    hidden = model.forward_padded(batch.ids, batch.real)
    timer.stop()
    if own:
        stats.forward_seconds += timer.seconds()
    rows, vectors = gather_occurrences(hidden, layers, batch, context_share)
    if observers:
        observe_batch(observers, hidden, batch)
    stats.occurrences += len(rows)
    stats.tokens += batch.tokens
    return rows, vectors
