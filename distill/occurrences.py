"""Which occurrences of each vocabulary word are encoded: a capped, seeded sample of its contexts.

The sample is planned from the word counts alone, so the rows of the occurrence store are known
before any sentence is encoded: word ``w`` owns rows ``offsets[w]:offsets[w+1]``, in corpus order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from distill.corpus import WORD_RE, Vocabulary


@dataclass(frozen=True)
class SamplePlan:
    """For each word, which of its occurrences (0-based, in corpus order) are kept."""

    offsets: np.ndarray  # (n_words + 1,) int64: word w owns rows offsets[w]:offsets[w+1]
    chosen: dict[int, np.ndarray]  # word id -> sorted ordinals kept, only for words over the cap

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def plan_sample(counts: np.ndarray, cap: int, seed: int) -> SamplePlan:
    """Keep every occurrence of a word seen at most ``cap`` times, else ``cap`` drawn uniformly.

    Deterministic for a seed: word ``w`` draws from its own generator ``(seed, w)``.
    """
    sizes = np.minimum(counts, cap).astype(np.int64)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    chosen = {}
    for w in np.flatnonzero(counts > cap):
        rng = np.random.default_rng([seed, int(w)])
        chosen[int(w)] = np.sort(rng.choice(int(counts[w]), size=cap, replace=False))
    return SamplePlan(offsets=offsets, chosen=chosen)


@dataclass(frozen=True)
class SentenceJob:
    """One sentence to encode and the sampled word occurrences in it."""

    sentence_id: int
    text: str
    starts: np.ndarray  # (k,) char offsets of the occurrences
    ends: np.ndarray  # (k,)
    rows: np.ndarray  # (k,) rows of the occurrence store they fill


def iter_jobs(lines: Iterator[str], vocab: Vocabulary, plan: SamplePlan) -> Iterator[SentenceJob]:
    """Walk the corpus again and yield the sentences holding at least one sampled occurrence.

    The counts must come from the same lines with the same case folding, so that the k-th
    occurrence of a word here is the k-th one counted.
    """
    index = vocab.index()
    seen = np.zeros(len(vocab), dtype=np.int64)  # occurrences met so far, per word
    cursor = np.zeros(len(vocab), dtype=np.int64)  # next position in chosen[w] / next row
    chosen = plan.chosen
    offsets = plan.offsets
    lower = vocab.lowercase
    for sentence_id, text in enumerate(lines):
        starts: list[int] = []
        ends: list[int] = []
        rows: list[int] = []
        for match in WORD_RE.finditer(text):
            word = match.group().lower() if lower else match.group()
            w = index.get(word)
            if w is None:
                continue
            k = seen[w]
            seen[w] = k + 1
            picks = chosen.get(w)
            if picks is not None:
                c = cursor[w]
                if c >= len(picks) or picks[c] != k:
                    continue
            else:
                c = cursor[w]
            cursor[w] = c + 1
            starts.append(match.start())
            ends.append(match.end())
            rows.append(int(offsets[w] + c))
        if rows:
            yield SentenceJob(
                sentence_id,
                text,
                np.asarray(starts, dtype=np.int64),
                np.asarray(ends, dtype=np.int64),
                np.asarray(rows, dtype=np.int64),
            )
    expected = np.diff(offsets)
    if not np.array_equal(cursor, expected):
        w = int(np.flatnonzero(cursor != expected)[0])
        raise RuntimeError(
            f"the corpus changed between passes: word {vocab.words[w]!r} filled {cursor[w]} of "
            f"{expected[w]} planned occurrences; do not edit the corpus while distilling"
        )
