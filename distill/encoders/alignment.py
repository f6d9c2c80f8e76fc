"""Map word occurrences (character spans) onto the sub-word pieces of tokenizer windows.

Works from the fast tokenizer's offsets, so WordPiece (``##`` pieces), byte-level BPE (pieces that
carry their leading space, as in GPT-2 and RoBERTa) and SentencePiece (``▁``) align the same way: a
piece belongs to an occurrence when their character spans overlap.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np


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
    tokenization itself.
    """
    windows: list[Window] = []
    for sentence, encoding in enumerate(encodings):
        overflowing = encoding.overflowing
        previous_end = None
        for piece in [encoding, *overflowing] if overflowing else (encoding,):
            offsets = np.array(piece.offsets, dtype=np.int64).reshape(-1, 2)
            starts, ends = offsets[:, 0], offsets[:, 1]
            content = ~np.array(piece.special_tokens_mask, dtype=bool) & (ends > starts)
            fresh = content if previous_end is None else content & (starts >= previous_end)
            window = Window(sentence, piece.ids, starts, ends, content, fresh)
            if overflowing:  # where the next window's fresh pieces start
                previous_end = window.span[1]
            windows.append(window)
    return windows


def choose_windows(windows: list[Window], sentence: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each occurrence, the window that holds it whole and gives it the most context on both sides.

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
    for k in np.flatnonzero(candidates > 1).tolist():  # long sentences: the best-centred window
        cs, ce, best = int(starts[k]), int(ends[k]), -1
        for i in range(first[sentence[k]], first[sentence[k]] + candidates[k]):
            lo, hi = windows[i].span
            if lo <= cs and ce <= hi:
                margin = min(cs - lo, hi - ce)
                if margin > best:
                    best, chosen[k] = margin, i
    return chosen


def piece_mask(window: Window, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """(k, n_tokens) bool: which of the window's pieces make up each occurrence ``[start, end)``."""
    return (window.starts[None, :] < ends[:, None]) & (window.ends[None, :] > starts[:, None]) & window.content[None, :]
