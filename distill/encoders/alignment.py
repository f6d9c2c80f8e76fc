"""Map word occurrences (character spans) onto the sub-word pieces of tokenizer windows.

Works from the fast tokenizer's offsets, so WordPiece (``##`` pieces), byte-level BPE (pieces that
carry their leading space, as in GPT-2 and RoBERTa) and SentencePiece (``▁``) align the same way: a
piece belongs to an occurrence when their character spans overlap.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from distill.collector import collector_paused


@dataclass(frozen=True)
class Window:
    """One model input: a whole sentence, or one window of a sentence longer than the model allows."""

    sentence: int  # index into the chunk of sentences being encoded
    ids: list[int]
    starts: np.ndarray  # (n_tokens,) char offset of each token; special tokens have start == end
    ends: np.ndarray  # (n_tokens,)
    content: np.ndarray  # (n_tokens,) bool: a real piece of text, not a special token
    fresh: np.ndarray | None = None  # (n_tokens,) bool: content not already in the sentence's previous window

    @property
    def new_content(self) -> np.ndarray:
        """``fresh``, or all the content where the encoder left ``fresh`` unset."""
        return self.content if self.fresh is None else self.fresh

    @property
    def span(self) -> tuple[int, int]:
        """Characters covered by the window's text pieces."""
        if not self.content.any():
            return (0, 0)
        return int(self.starts[self.content].min()), int(self.ends[self.content].max())


def truncating_backend(tokenizer: Any, max_length: int, stride: int) -> Any:
    """A copy of a Hugging Face fast tokenizer's Rust backend that cuts texts into windows of at most
    ``max_length`` pieces, consecutive windows sharing ``stride`` pieces (the overflow encodings)."""
    backend = copy.deepcopy(tokenizer.backend_tokenizer)
    backend.no_padding()
    backend.enable_truncation(max_length, stride=stride, strategy="longest_first", direction=tokenizer.truncation_side)
    return backend


def make_windows(encodings: list[Any]) -> list[Window]:
    """Windows from the encodings of ``truncating_backend(...).encode_batch(texts)``, one per text plus its
    overflow windows.

    The same windows as ``tokenizer(texts, truncation=True, return_overflowing_tokens=True, ...)``, read
    straight from the Rust encodings: the Python dicts transformers builds on the way cost more than the
    tokenization itself. Offsets and masks of the whole batch are read into one array each; every window
    holds views of them.
    """
    with collector_paused():  # the tuples of offsets, and an object per window
        pieces = [
            (sentence, piece)
            for sentence, encoding in enumerate(encodings)
            for piece in ((encoding, *encoding.overflowing) if encoding.overflowing else (encoding,))
        ]
        ids = [piece.ids for _, piece in pieces]
        lengths = list(map(len, ids))
        n = sum(lengths)
        offsets = np.fromiter(chain.from_iterable(chain.from_iterable(p.offsets for _, p in pieces)), np.int64, 2 * n)
        special = np.fromiter(chain.from_iterable(p.special_tokens_mask for _, p in pieces), np.int8, n)
        starts, ends = offsets[0::2], offsets[1::2]
        content = (special == 0) & (ends > starts)
        bounds = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        windows: list[Window] = []
        previous_end = 0
        for i, (sentence, lo, hi) in enumerate(zip([s for s, _ in pieces], bounds[:-1].tolist(), bounds[1:].tolist())):
            fresh = content[lo:hi]
            if windows and windows[-1].sentence == sentence:  # an overflow window: its fresh pieces
                fresh = fresh & (starts[lo:hi] >= previous_end)
            window = Window(sentence, ids[i], starts[lo:hi], ends[lo:hi], content[lo:hi], fresh)
            if i + 1 < len(pieces) and pieces[i + 1][0] == sentence:  # where the next window's fresh pieces start
                previous_end = window.span[1]
            windows.append(window)
    return windows


@dataclass
class WindowTokenizer:
    """A model's truncating fast tokenizer alone (``tokenize`` and ``unk_id`` of an ``Encoder``, for one
    stride): what a worker process needs to tokenize and align chunks, sent to it without torch."""

    backend: Any
    unk_id: int | None

    def tokenize(self, texts: list[str], stride: int) -> list[Window]:
        return make_windows(self.backend.encode_batch(texts, add_special_tokens=True))


def choose_windows(windows: list[Window], sentence: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each occurrence, the window that holds it whole and gives it the most context on both sides (the
    first such window on a tie).

    ``sentence``, ``starts``, ``ends``: (k,) arrays. Returns (k,) window indices, -1 where no window
    holds the occurrence whole (a word longer than a window). The windows of a sentence must be
    consecutive in ``windows``, as :func:`make_windows` gives them.
    """
    window_sentence = np.array([w.sentence for w in windows], dtype=np.int64)
    n_sentences = int(max(window_sentence.max(initial=-1), sentence.max(initial=-1))) + 1
    per_sentence = np.bincount(window_sentence, minlength=n_sentences)
    first = np.full(n_sentences, -1, dtype=np.int64)
    present, first_window = np.unique(window_sentence, return_index=True)
    first[present] = first_window
    candidates = per_sentence[sentence]  # windows of each occurrence's sentence
    chosen = np.where(candidates == 1, first[sentence], -1)  # the common case: one window
    long = np.flatnonzero(candidates > 1)  # occurrences of long sentences: the best-centred window
    if long.size:
        many = np.flatnonzero(per_sentence[window_sentence] > 1)  # the windows of long sentences, in order
        spans = np.array([windows[i].span for i in many.tolist()], dtype=np.int64).reshape(-1, 2)
        chosen[long] = _best_centred(many, window_sentence[many], spans, sentence[long], starts[long], ends[long])
    return chosen


def _best_centred(
    index: np.ndarray, owner: np.ndarray, spans: np.ndarray, sentence: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """:func:`choose_windows` among the windows ``index`` (of sentences ``owner``, covering ``spans``) for
    occurrences of those sentences. A sentence's windows move forward through it, so those that hold an
    occurrence are consecutive: found by binary search, then only they are compared (a text of one long line
    has thousands of windows, each occurrence a few)."""
    lo, hi = spans[:, 0], spans[:, 1]
    sentence, starts, ends = (np.asarray(a, dtype=np.int64) for a in (sentence, starts, ends))
    shift = np.int64(40)  # sentence, then characters (under 2**40 a sentence), as one sortable key
    key_lo, key_hi = (owner << shift) | lo, (owner << shift) | hi
    if np.any(np.diff(key_lo) < 0) or np.any(np.diff(key_hi) < 0):  # windows out of order: compare them all
        return np.array([_scan(index, owner, spans, *row) for row in zip(sentence, starts, ends)], dtype=np.int64)
    first = np.searchsorted(key_hi, (sentence << shift) | ends, side="left")  # the first that reaches the end
    last = np.searchsorted(key_lo, (sentence << shift) | starts, side="right") - 1  # the last that has the start
    best, chosen = np.full(len(sentence), -1, dtype=np.int64), np.full(len(sentence), -1, dtype=np.int64)
    for step in range(int((last - first).max(initial=-1)) + 1):
        at = np.minimum(first + step, len(index) - 1)
        margin = np.minimum(starts - lo[at], hi[at] - ends)
        better = (first + step <= last) & (margin > best)
        best, chosen = np.where(better, margin, best), np.where(better, index[at], chosen)
    return chosen


def _scan(index: np.ndarray, owner: np.ndarray, spans: np.ndarray, sentence: int, start: int, end: int) -> int:
    """:func:`_best_centred` for one occurrence, comparing every window of its sentence."""
    best, chosen = -1, -1
    for i in np.flatnonzero(owner == sentence).tolist():
        lo, hi = int(spans[i, 0]), int(spans[i, 1])
        if lo <= start and end <= hi and min(start - lo, hi - end) > best:
            best, chosen = min(start - lo, hi - end), int(index[i])
    return chosen


def piece_mask(window: Window, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """(k, n_tokens) bool: which of the window's pieces make up each occurrence ``[start, end)``: the text
    pieces whose span overlaps it. The definition :func:`align_pieces` computes faster."""
    return (window.starts[None, :] < ends[:, None]) & (window.ends[None, :] > starts[:, None]) & window.content[None, :]


def token_starts(windows: Sequence[Window]) -> np.ndarray:
    """(n + 1,) where each window's tokens start when all windows' tokens are laid end to end; the last
    entry is their total."""
    starts = np.zeros(len(windows) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, (w.ids for w in windows)), np.int64, len(windows)), out=starts[1:])
    return starts


def align_pieces(
    windows: Sequence[Window], chosen: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of occurrences ``[starts, ends)`` in windows ``chosen`` (each >= 0), as :func:`piece_mask`
    finds them: (positions in their window, each occurrence's together in token order; (k,) counts).

    A window's text pieces run left to right, their starts and their ends each in order, so an occurrence's
    pieces are a run of them, found by two binary searches over the pieces of all windows at once. A window
    whose offsets are out of order (no tokenizer known to us makes one) is aligned by the mask instead.
    """
    first_token = token_starts(windows)
    content = np.concatenate([w.content for w in windows])
    text = np.flatnonzero(content)  # flat positions of the text pieces
    owner = np.repeat(np.arange(len(windows)), np.diff(first_token))[text]
    piece_starts = np.concatenate([w.starts for w in windows])[text]
    piece_ends = np.concatenate([w.ends for w in windows])[text]
    span = int(max(piece_ends.max(initial=0), ends.max(initial=0))) + 1
    start_keys, end_keys = owner * span + piece_starts, owner * span + piece_ends
    lo = np.searchsorted(end_keys, chosen * span + starts, side="right")  # first piece ending after the start
    hi = np.searchsorted(start_keys, chosen * span + ends, side="left")  # first piece starting at or after the end
    counts = np.maximum(hi - lo, 0)
    run = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    positions = text[np.repeat(lo, counts) + run] - np.repeat(first_token[chosen], counts)
    unordered = (np.diff(start_keys) < 0) | (np.diff(end_keys) < 0)
    if unordered.any():
        bad = np.isin(chosen, owner[1:][unordered])
        per_occurrence = np.split(positions, np.cumsum(counts)[:-1])
        for k in np.flatnonzero(bad).tolist():
            mask = piece_mask(windows[chosen[k]], starts[k : k + 1], ends[k : k + 1])[0]
            per_occurrence[k] = np.flatnonzero(mask)
            counts[k] = len(per_occurrence[k])
        positions = np.concatenate(per_occurrence) if per_occurrence else positions
    return positions, counts


def pad_windows(batch: Sequence[Window]) -> tuple[np.ndarray, np.ndarray]:
    """The right-padded (B, T) ids of a batch of windows (0 where padded), and which positions are real."""
    lengths = np.fromiter(map(len, (w.ids for w in batch)), np.int64, len(batch))
    real = np.arange(int(lengths.max(initial=0)))[None, :] < lengths[:, None]
    ids = np.zeros(real.shape, dtype=np.int64)
    ids[real] = np.fromiter(chain.from_iterable(w.ids for w in batch), np.int64, int(lengths.sum()))
    return ids, real
