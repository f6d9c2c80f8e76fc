"""Map word occurrences (character spans) onto the sub-word pieces of tokenizer windows.

Works from the fast tokenizer's offsets, so WordPiece (``##`` pieces), byte-level BPE (pieces that
carry their leading space, as in GPT-2 and RoBERTa) and SentencePiece (``▁``) align the same way: a
piece belongs to an occurrence when their character spans overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def make_windows(encoding: dict, n_sentences: int) -> list[Window]:
    """Windows from a batched fast-tokenizer call made with offsets and special-token masks."""
    mapping = encoding.get("overflow_to_sample_mapping") or list(range(n_sentences))
    windows: list[Window] = []
    for row, sentence in enumerate(mapping):
        offsets = np.asarray(encoding["offset_mapping"][row], dtype=np.int64).reshape(-1, 2)
        special = np.asarray(encoding["special_tokens_mask"][row], dtype=bool)
        starts, ends = offsets[:, 0], offsets[:, 1]
        content = ~special & (ends > starts)
        fresh = content
        if windows and windows[-1].sentence == sentence:  # overflow windows of one sentence come in order
            fresh = content & (starts >= windows[-1].span[1])
        windows.append(Window(int(sentence), list(encoding["input_ids"][row]), starts, ends, content, fresh))
    return windows


def choose_windows(windows: list[Window], sentence: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each occurrence, the window that holds it whole and gives it the most context on both sides.

    ``sentence``, ``starts``, ``ends``: (k,) arrays. Returns (k,) window indices, -1 where no window
    holds the occurrence whole (a word longer than a window).
    """
    by_sentence: dict[int, list[int]] = {}
    for i, window in enumerate(windows):
        by_sentence.setdefault(window.sentence, []).append(i)
    chosen = np.full(len(sentence), -1, dtype=np.int64)
    for k, (s, cs, ce) in enumerate(zip(sentence.tolist(), starts.tolist(), ends.tolist())):
        candidates = by_sentence.get(s, [])
        if len(candidates) == 1:
            chosen[k] = candidates[0]
            continue
        best = -1
        for i in candidates:
            lo, hi = windows[i].span
            if lo <= cs and ce <= hi:
                margin = min(cs - lo, hi - ce)
                if margin > best:
                    best, chosen[k] = margin, i
    return chosen


def piece_mask(window: Window, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """(k, n_tokens) bool: which of the window's pieces make up each occurrence ``[start, end)``."""
    return (window.starts[None, :] < ends[:, None]) & (window.ends[None, :] > starts[:, None]) & window.content[None, :]
