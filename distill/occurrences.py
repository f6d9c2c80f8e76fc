"""Which occurrences of each vocabulary word are encoded: a capped, seeded sample of its contexts.

Word ``w`` gets ``min(count, cap)`` rows of the occurrence store, ``offsets[w]:offsets[w+1]``,
known from the counting pass before any sentence is encoded. Two ways to fill them:

- ``uniform`` (:func:`iter_jobs`): each word's ``cap`` occurrences are drawn uniformly from all of
  its occurrences in the corpus; a sentence is encoded when it holds a drawn occurrence.
- ``greedy`` (:func:`iter_jobs_greedy`): sentences come in a seeded streaming shuffle; a sentence is
  encoded only when it holds a word that still needs occurrences, and then gives every such word
  one; reading stops once every word is full. Fewer sentences are encoded (each serves all of its
  still-needed words) and on a corpus much larger than ``vocabulary x cap`` most of it is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
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


def plan_sample(counts: np.ndarray, cap: int, seed: int, draw: bool = True) -> SamplePlan:
    """Keep every occurrence of a word seen at most ``cap`` times, else ``cap`` drawn uniformly.

    Deterministic for a seed: word ``w`` draws from its own generator ``(seed, w)``. ``draw=False``
    only sizes the rows (greedy sampling picks occurrences as it reads).
    """
    sizes = np.minimum(counts, cap).astype(np.int64)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    chosen = {}
    for w in np.flatnonzero(counts > cap) if draw else ():
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


@dataclass
class SamplingStats:
    """What the encoding pass read and skipped."""

    sentences_read: int = 0
    sentences_kept: int = 0  # holding at least one occurrence to encode

    def to_json(self, method: str, corpus_lines: int) -> dict[str, object]:
        return {
            "method": method,
            "sentences_read": self.sentences_read,
            "sentences_encoded": self.sentences_kept,
            "share_skipped": round(1 - self.sentences_kept / max(corpus_lines, 1), 4),
            "stopped_early": self.sentences_read < corpus_lines,
        }


def _walk(
    lines: Iterable[str],
    vocab: Vocabulary,
    stats: SamplingStats | None,
    take: Callable[[int], int],
    full: Callable[[], bool],
) -> Iterator[SentenceJob]:
    """The sentences in which ``take(word id)`` gives a store row (-1: not this occurrence) to at least
    one vocabulary word; stops once ``full()``."""
    stats = stats if stats is not None else SamplingStats()
    get, finditer = vocab.index().get, WORD_RE.finditer  # bound once: this loop runs per word of the corpus
    lower = vocab.lowercase
    for sentence_id, text in enumerate(lines):
        stats.sentences_read += 1
        starts: list[int] = []
        ends: list[int] = []
        rows: list[int] = []
        for match in finditer(text):
            w = get(match.group().lower() if lower else match.group())
            if w is None:
                continue
            row = take(w)
            if row < 0:
                continue
            start, end = match.span()
            starts.append(start)
            ends.append(end)
            rows.append(row)
        if rows:
            stats.sentences_kept += 1
            yield SentenceJob(
                sentence_id,
                text,
                np.asarray(starts, dtype=np.int64),
                np.asarray(ends, dtype=np.int64),
                np.asarray(rows, dtype=np.int64),
            )
        if full():
            return


def iter_jobs(
    lines: Iterable[str], vocab: Vocabulary, plan: SamplePlan, stats: SamplingStats | None = None
) -> Iterator[SentenceJob]:
    """Walk the corpus again and yield the sentences holding at least one sampled occurrence.

    The counts must come from the same lines with the same case folding, so that the k-th
    occurrence of a word here is the k-th one counted.
    """
    # Python lists, not numpy arrays: take() runs once per word of the corpus, and indexing a list is
    # much faster than a numpy scalar access
    seen = [0] * len(vocab)  # occurrences met so far, per word
    cursor = [0] * len(vocab)  # next position in chosen[w] / next row
    chosen = {w: picks.tolist() for w, picks in plan.chosen.items()}
    offsets = plan.offsets.tolist()

    def take(w: int) -> int:
        k = seen[w]
        seen[w] = k + 1
        c = cursor[w]
        picks = chosen.get(w)
        if picks is not None and (c >= len(picks) or picks[c] != k):
            return -1
        cursor[w] = c + 1
        return offsets[w] + c

    yield from _walk(lines, vocab, stats, take, lambda: False)
    expected = plan.sizes()
    if not np.array_equal(cursor, expected):
        w = int(np.flatnonzero(np.asarray(cursor) != expected)[0])
        raise RuntimeError(
            f"the corpus changed between passes: word {vocab.words[w]!r} filled {cursor[w]} of "
            f"{expected[w]} planned occurrences; do not edit the corpus while distilling"
        )


def shuffle_stream(lines: Iterable[str], buffer: int, seed: int) -> Iterator[str]:
    """A seeded streaming shuffle: hold ``buffer`` lines, yield a random one, put the next line in its place."""
    rng = np.random.default_rng([seed, 0x5EED])
    held: list[str] = []
    for line in lines:
        if len(held) < buffer:
            held.append(line)
            continue
        i = int(rng.integers(buffer))
        yield held[i]
        held[i] = line
    order = rng.permutation(len(held))
    for i in order:
        yield held[i]


def iter_jobs_greedy(
    lines: Iterable[str], vocab: Vocabulary, plan: SamplePlan, stats: SamplingStats | None = None
) -> Iterator[SentenceJob]:
    """Yield the sentences that hold a word still short of its ``plan`` rows, taking all such occurrences.

    ``lines`` should already be in the order to sample in (:func:`shuffle_stream`). Stops reading
    as soon as every word has all its rows.
    """
    need = plan.sizes().tolist()  # a list: take() runs once per word of the corpus
    offsets = plan.offsets.tolist()
    remaining = sum(n > 0 for n in need)

    def take(w: int) -> int:
        nonlocal remaining
        n = need[w]
        if n == 0:
            return -1
        need[w] = n - 1
        remaining -= n == 1
        return offsets[w + 1] - n

    yield from _walk(lines, vocab, stats, take, lambda: remaining == 0)
    if remaining:
        w = int(np.flatnonzero(need)[0])
        raise RuntimeError(
            f"the corpus changed between passes: word {vocab.words[w]!r} is {need[w]} occurrences short; "
            "do not edit the corpus while distilling"
        )
