"""Sentences to model inputs, on the host: tokenized into windows, each sampled occurrence aligned to its
pieces, windows length-sorted and cut into batches, each batch a few arrays (:class:`Batch`). No torch here: a
worker process that only tokenizes starts light."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Protocol

import numpy as np

from distill.encoders.alignment import Window, align_pieces, choose_windows, pad_windows, token_starts
from distill.iterate import batched
from distill.occurrences import SentenceJob


class Tokenizing(Protocol):
    """What preparing a chunk needs of an encoder (an ``Encoder``, or a ``WindowTokenizer`` in a worker)."""

    unk_id: int | None

    def tokenize(self, texts: list[str], stride: int) -> list[Window]: ...


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


def bounds(sizes: list[int]) -> list[int]:
    """Where each of consecutive runs of ``sizes`` starts, and (last) where the last one ends."""
    return [0, *np.cumsum(sizes).tolist()] if sizes else [0]


def prepare_chunk(model: Tokenizing, jobs: list[SentenceJob], stride: int, stats: EncodeStats) -> list[PreparedWindow]:
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
    # occurrences grouped by window, in corpus order within each; those with no window or no piece dropped
    order = np.argsort(chosen, kind="stable")
    order = order[chosen[order] >= 0]
    tok, pieces = align_pieces(windows, chosen[order], starts[order], ends[order])
    stats.not_aligned += len(chosen) - len(order) + int((pieces == 0).sum())
    order, pieces = order[pieces > 0], pieces[pieces > 0]
    if not len(order):
        return []
    owner = chosen[order]
    piece_bounds = bounds(pieces.tolist())  # of each occurrence's pieces in tok
    if model.unk_id is not None:  # occurrences that are only the unknown piece
        first_token = token_starts(windows)
        ids = np.fromiter(chain.from_iterable(w.ids for w in windows), np.int64, int(first_token[-1]))
        at = first_token[np.repeat(owner, pieces)] + tok
        known = np.add.reduceat(ids[at] != model.unk_id, piece_bounds[:-1])
        stats.unknown += int((known == 0).sum())
    cuts = np.flatnonzero(np.diff(owner)) + 1  # where the next window's occurrences start
    firsts = [0, *cuts.tolist()]
    lasts = [*cuts.tolist(), len(order)]
    rows = rows[order]
    prepared = []
    for w, a, b in zip(owner[firsts].tolist(), firsts, lasts):  # runs per window: kept lean
        window = windows[w]
        job = jobs[window.sentence]
        prepared.append(PreparedWindow(window, rows[a:b], tok[piece_bounds[a] : piece_bounds[b]], pieces[a:b],
                                       (job.sentence_id, job.text)))  # fmt: skip
    return prepared


def prepare_sorted(model: Tokenizing, jobs: list[SentenceJob], stride: int, stats: EncodeStats) -> list[PreparedWindow]:
    """:func:`prepare_chunk`, the windows sorted by length (stably): batches cut from them in order pad little."""
    prepared = prepare_chunk(model, jobs, stride, stats)
    prepared.sort(key=lambda p: len(p.window.ids))
    return prepared


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


@dataclass
class Batch:
    """One forward pass, as arrays: the windows' pieces right-padded, and the occurrences to gather from the
    hidden states. What a worker process sends back whole; the main process only turns it into tensors."""

    ids: np.ndarray  # (B, T) piece ids, 0 where padded
    lengths: np.ndarray  # (B,) pieces of each window
    content: np.ndarray  # (B, T) bool: a real piece of text, not a special token or padding
    fresh: np.ndarray  # (B, T) bool: content not already in the sentence's previous window
    rows: np.ndarray  # (k,) store rows of the occurrences
    tok: np.ndarray  # (p,) position b * T + t of each (occurrence, piece), an occurrence's pieces together
    pieces: np.ndarray  # (k,) pieces of each occurrence
    sentence: np.ndarray  # (B,) each window's sentence: its index in ``jobs``
    jobs: Sequence[SentenceJob] = field(default=(), repr=False)  # the chunk's sentences, set where they are held

    @property
    def real(self) -> np.ndarray:
        """(B, T) bool: the positions that are not padding."""
        return np.arange(self.ids.shape[1])[None, :] < self.lengths[:, None]

    @property
    def tokens(self) -> int:
        """Pieces through the model, special ones included, padding not."""
        return int(self.lengths.sum())

    def sentences(self) -> list[tuple[int, str, int]]:
        """Each window's sentence id and text, and its number of pieces."""
        return [(self.jobs[s].sentence_id, self.jobs[s].text, n) for s, n in zip(self.sentence.tolist(),
                                                                                   self.lengths.tolist())]  # fmt: skip


def make_batch(prepared: Sequence[PreparedWindow], jobs: Sequence[SentenceJob] = ()) -> Batch:
    """The :class:`Batch` of windows prepared from ``jobs`` (a chunk's sentences)."""
    windows = [p.window for p in prepared]
    ids, real = pad_windows(windows)
    width = ids.shape[1]
    content, fresh = np.zeros_like(real), np.zeros_like(real)
    content[real] = np.concatenate([w.content for w in windows])
    fresh[real] = np.concatenate([w.new_content for w in windows])
    return Batch(
        ids=ids,
        lengths=real.sum(axis=1),
        content=content,
        fresh=fresh,
        rows=np.concatenate([p.rows for p in prepared]),
        tok=np.concatenate([p.tok + i * width for i, p in enumerate(prepared)]),
        pieces=np.concatenate([p.pieces for p in prepared]),
        sentence=np.array([w.sentence for w in windows], dtype=np.int64),
        jobs=jobs,
    )


def cut_batches(
    prepared: Sequence[PreparedWindow], batch_size: int, budget: int | None
) -> Iterator[list[PreparedWindow]]:
    """Length-sorted windows cut as the encoder runs them: batches of ``budget`` padded tokens, else of
    ``batch_size`` windows."""
    return token_batches(prepared, budget) if budget else batched(prepared, batch_size)
