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
from functools import partial
from itertools import repeat
from typing import Any

import numpy as np
import regex

from distill.corpus import BLOCK_LINES, WORD_RE, Vocabulary
from distill.iterate import batched
from distill.parallel import Mapper, Shared, in_process, with_items


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

    def to_json(self, method: str, corpus_lines: int) -> dict[str, Any]:
        return {
            "method": method,
            "sentences_read": self.sentences_read,
            "sentences_encoded": self.sentences_kept,
            "share_skipped": round(1 - self.sentences_kept / max(corpus_lines, 1), 4),
            "stopped_early": self.sentences_read < corpus_lines,
        }


#: A word and what surrounds it, as one split: word runs at odd indices, the text between at even ones.
_SPLIT_RE = regex.compile(f"({WORD_RE.pattern})")

#: Keys of (word, ordinal) pairs: ``word * _SPAN + ordinal``.
_SPAN = 1 << 32


@dataclass(frozen=True)
class _Block:
    """The vocabulary words met in a block of lines, in corpus order."""

    line: np.ndarray  # (n,) the line of the block each occurrence is in
    ids: np.ndarray  # (n,) its word id
    starts: np.ndarray  # (n,) char offsets in its line
    ends: np.ndarray
    rank: np.ndarray  # (n,) its number among its word's occurrences in the block (0-based)


def _block_words(texts: list[str], get: Callable[..., int], lowercase: bool) -> _Block:
    """Every vocabulary word of ``texts``: one regex split of the joined block and one dictionary lookup
    per word, in C. Lines are joined by line breaks, which no word holds, so no word spans two lines."""
    parts = _SPLIT_RE.split("\n".join(texts))
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    words = parts[1::2]
    found = map(get, map(str.lower, words) if lowercase else words, repeat(-1))
    ids = np.fromiter(found, dtype=np.int64, count=len(words))
    known = np.flatnonzero(ids >= 0)
    ends = np.cumsum(lengths)[1::2][known]
    starts = ends - lengths[1::2][known]
    line_starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum([len(text) + 1 for text in texts[:-1]], out=line_starts[1:])
    line = np.searchsorted(line_starts, starts, side="right") - 1
    ids = ids[known]
    return _Block(line, ids, starts - line_starts[line], ends - line_starts[line], _ranks(ids))


def _ranks(ids: np.ndarray) -> np.ndarray:
    """Each id's number among the earlier occurrences of the same id (0-based): the block's part of the
    ordinals, which needs no other block (a worker computes it)."""
    order = np.argsort(ids, kind="stable")
    grouped = ids[order]
    rank = np.empty_like(ids)
    rank[order] = np.arange(len(ids)) - np.searchsorted(grouped, grouped, side="left")
    return rank


def _ordinals(block: _Block, seen: np.ndarray) -> np.ndarray:
    """Each occurrence's number among its word's occurrences so far (0-based); adds the block to ``seen``."""
    ordinal = seen[block.ids] + block.rank
    seen += np.bincount(block.ids, minlength=len(seen))
    return ordinal


def split_block(index: Shared[dict[str, int]], lowercase: bool, texts: list[str]) -> _Block:
    """:func:`_block_words` with the vocabulary's index, as a worker process runs it."""
    return _block_words(texts, index.value.get, lowercase)


def _walk(
    lines: Iterable[str],
    vocab: Vocabulary,
    stats: SamplingStats | None,
    select: Callable[[_Block], tuple[np.ndarray, int | None]],
    mapper: Mapper = in_process,
) -> Iterator[SentenceJob]:
    """The sentences in which ``select`` gives a store row (-1: not this occurrence) to at least one
    vocabulary word. ``select`` sees a block of lines at a time, in order, and returns the rows and the
    last line to read (None: read on).

    Lines are taken a block at a time (:data:`BLOCK_LINES`): the work per word of the corpus is numpy's,
    not Python's. Finding the words of each block is most of the walk's work and needs no other block:
    ``mapper`` (a :class:`~distill.parallel.WorkerPool`'s) does it in worker processes, a few blocks ahead,
    while ``select`` takes them here, in order."""
    stats = stats if stats is not None else SamplingStats()
    split = partial(split_block, Shared(vocab.index()), vocab.lowercase)
    read = 0
    for texts, block in with_items(mapper, split, batched(lines, BLOCK_LINES)):
        rows, stop = select(block)
        stats.sentences_read += len(texts) if stop is None else stop + 1
        keep = np.flatnonzero(rows >= 0)
        kept_lines, first = np.unique(block.line[keep], return_index=True)
        stats.sentences_kept += len(kept_lines)
        starts, ends, rows = block.starts[keep], block.ends[keep], rows[keep]
        bounds = [*first.tolist(), len(keep)]
        for i, line in enumerate(kept_lines.tolist()):
            lo, hi = bounds[i], bounds[i + 1]
            yield SentenceJob(read + line, texts[line], starts[lo:hi], ends[lo:hi], rows[lo:hi])
        if stop is not None:
            return
        read += len(texts)


def iter_jobs(
    lines: Iterable[str],
    vocab: Vocabulary,
    plan: SamplePlan,
    stats: SamplingStats | None = None,
    mapper: Mapper = in_process,
) -> Iterator[SentenceJob]:
    """Walk the corpus again and yield the sentences holding at least one sampled occurrence.

    The counts must come from the same lines with the same case folding, so that the k-th
    occurrence of a word here is the k-th one counted.
    """
    seen = np.zeros(len(vocab), dtype=np.int64)  # occurrences met so far, per word
    taken = np.zeros(len(vocab), dtype=np.int64)
    offsets = plan.offsets[:-1]
    capped = np.zeros(len(vocab), dtype=bool)
    capped[list(plan.chosen)] = True
    # the chosen (word, ordinal) pairs as sorted keys; a capped word's k-th chosen ordinal fills its k-th row
    picks = [w * _SPAN + plan.chosen[w] for w in sorted(plan.chosen)]
    keys = np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)
    first_key = np.searchsorted(keys, np.flatnonzero(capped) * _SPAN)
    first = np.zeros(len(vocab), dtype=np.int64)
    first[capped] = first_key

    def select(block: _Block) -> tuple[np.ndarray, None]:
        ids = block.ids
        ordinal = _ordinals(block, seen)
        rows = offsets[ids] + ordinal
        over = np.flatnonzero(capped[ids])
        if len(over) and len(keys):
            key = ids[over] * _SPAN + ordinal[over]
            at = np.searchsorted(keys, key)
            hit = keys[np.minimum(at, len(keys) - 1)] == key
            rows[over] = np.where(hit, offsets[ids[over]] + at - first[ids[over]], -1)
        taken[:] += np.bincount(ids[rows >= 0], minlength=len(vocab))
        return rows, None

    yield from _walk(lines, vocab, stats, select, mapper)
    expected = plan.sizes()
    if not np.array_equal(taken, expected):
        w = int(np.flatnonzero(taken != expected)[0])
        raise RuntimeError(
            f"the corpus changed between passes: word {vocab.words[w]!r} filled {taken[w]} of "
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
    lines: Iterable[str],
    vocab: Vocabulary,
    plan: SamplePlan,
    stats: SamplingStats | None = None,
    mapper: Mapper = in_process,
) -> Iterator[SentenceJob]:
    """Yield the sentences that hold a word still short of its ``plan`` rows, taking all such occurrences.

    ``lines`` should already be in the order to sample in (:func:`shuffle_stream`). Stops reading
    as soon as every word has all its rows.
    """
    sizes = plan.sizes()
    offsets = plan.offsets[:-1]
    seen = np.zeros(len(vocab), dtype=np.int64)
    remaining = int(np.count_nonzero(sizes))

    def select(block: _Block) -> tuple[np.ndarray, int | None]:
        # a word's first sizes[w] occurrences in reading order fill its rows, in that order
        nonlocal remaining
        ids = block.ids
        ordinal = _ordinals(block, seen)
        size = sizes[ids]
        filled = ordinal == size - 1  # the occurrence that gives its word the last row
        remaining -= int(np.count_nonzero(filled))
        rows = np.where(ordinal < size, offsets[ids] + ordinal, -1)
        return rows, None if remaining else int(block.line[filled].max(initial=0))

    yield from _walk(lines, vocab, stats, select, mapper)
    if remaining:
        need = sizes - np.minimum(seen, sizes)
        w = int(np.flatnonzero(need)[0])
        raise RuntimeError(
            f"the corpus changed between passes: word {vocab.words[w]!r} is {need[w]} occurrences short; "
            "do not edit the corpus while distilling"
        )
