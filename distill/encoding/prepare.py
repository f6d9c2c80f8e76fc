"""Sentences to model inputs, on the host: tokenized into windows, each sampled occurrence aligned to its
pieces. No torch here: a worker process that only tokenizes starts light."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from distill.encoders.alignment import Window, choose_windows, piece_mask
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
