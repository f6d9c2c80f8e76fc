"""Sentences to model inputs, on the host: tokenized into windows, each sampled occurrence aligned to its
pieces. No torch here: a worker process that only tokenizes starts light."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from itertools import chain
from typing import Protocol

import numpy as np

from distill.encoders.alignment import Window, align_pieces, choose_windows, token_starts
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
