"""The batches the model runs, and what comes out of one: each sampled occurrence's vector in every layer.

Sentences are tokenized into windows a chunk at a time, each occurrence aligned to its pieces,
windows length-sorted and batched; one forward pass gives every requested layer, and the pieces of
each occurrence are averaged. Observers (:class:`Observer`) see every batch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

import numpy as np
import torch

from distill.encoders import Encoder
from distill.encoders.alignment import Window, choose_windows, piece_mask
from distill.occurrences import SentenceJob


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


@dataclass
class EncodeStats:
    """Counts and timings of the encoding stage."""

    sentences: int = 0
    windows: int = 0
    long_sentences: int = 0  # sentences split into several windows
    tokens: int = 0  # tokens through the model, special tokens included, padding excluded
    occurrences: int = 0  # occurrences written to the store
    not_aligned: int = 0  # occurrences with no piece in any window (dropped)
    unknown: int = 0  # occurrences that are only the tokenizer's unknown piece
    forward_seconds: float = 0.0
    seconds: float = 0.0

    def add(self, other: EncodeStats) -> None:
        """Add ``other``'s counts and forward time (not its wall time) to these."""
        for f in dataclasses.fields(self):
            if f.name != "seconds":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class PreparedWindow:
    """A window to run and the occurrences to gather from it."""

    window: Window
    rows: np.ndarray  # (k,) store rows
    tok: np.ndarray  # (p,) token position of each (occurrence, piece) pair, each occurrence's pieces together
    pieces: np.ndarray  # (k,) number of pieces of each occurrence
    sentence: tuple[int, str] = (-1, "")  # the window's sentence: its id in the corpus walk and its text


def batched(items: Iterable[Any], n: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, n)):
        yield chunk


def prepare_chunk(model: Encoder, jobs: list[SentenceJob], stride: int, stats: EncodeStats) -> list[PreparedWindow]:
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
        if model.unk_id is not None:
            known = mask & (np.asarray(window.ids) != model.unk_id)[None, :]
            stats.unknown += int((~known.any(axis=1)).sum())
        _, tok = mask.nonzero()  # row-major: each occurrence's pieces together
        job = jobs[window.sentence]
        prepared.append(PreparedWindow(window, rows[idx], tok, n_pieces, (job.sentence_id, job.text)))
    return prepared


def gather_occurrences(
    hidden: tuple[torch.Tensor, ...], layers: tuple[int, ...], batch: list[PreparedWindow], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean of each occurrence's pieces in every requested layer: (rows (k,), vectors (L, k, D)).

    One ``embedding_bag`` per layer (the pieces of an occurrence are one bag): one
    kernel instead of indexing, weighting and ``index_add_``."""
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
    observers: Sequence[Observer], hidden: tuple[torch.Tensor, ...], batch: list[PreparedWindow], width: int
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
) -> Iterator[list[PreparedWindow] | ChunkDone]:
    """The batches the model runs: chunks of sentences tokenized into windows, length-sorted per chunk.

    Each chunk's batches are followed by a :class:`ChunkDone`. The first ``skip_chunks`` chunks (done
    before a checkpoint) are walked but not tokenized.
    """
    for index, chunk in enumerate(batched(jobs, chunk_size)):
        counts = EncodeStats()
        if index >= skip_chunks:
            prepared = prepare_chunk(model, chunk, stride, counts)
            prepared.sort(key=lambda p: len(p.window.ids))
            yield from batched(prepared, batch_size)
        yield ChunkDone(index, counts)


def encode_batch(
    model: Encoder,
    layers: tuple[int, ...],
    batch: list[PreparedWindow],
    stats: EncodeStats,
    observers: Sequence[Observer] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """One forward pass: each occurrence's vectors in every layer (rows (k,), vectors (L, k, D)), shown to
    the observers; tokens, occurrences and forward time are added to ``stats``."""
    t0 = time.perf_counter()
    hidden, width = model.forward([p.window for p in batch])
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    stats.forward_seconds += time.perf_counter() - t0
    rows, vectors = gather_occurrences(hidden, layers, batch, width)
    if observers:
        observe_batch(observers, hidden, batch, width)
    stats.occurrences += len(rows)
    stats.tokens += sum(len(p.window.ids) for p in batch)
    return rows, vectors
