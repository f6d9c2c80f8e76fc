"""The sentences a run would encode, as the benchmarks build them: count, vocabulary, seeded sample, walk.

Light imports only: the tokenizing workers of the scripts that use it import it again (multiprocessing does).
"""

from __future__ import annotations

from collections.abc import Iterator

from distill.corpus import build_vocabulary, count_words, iter_lines
from distill.occurrences import SentenceJob, iter_jobs, plan_sample
from distill.parallel import Mapper, in_process


def sentence_jobs(
    paths: list[str], lowercase: bool, min_count: int, max_occurrences: int, seed: int, mapper: Mapper | None = None
) -> Iterator[SentenceJob]:
    """The sentence jobs of ``paths`` for words seen ``min_count`` times or more, each sampled at most
    ``max_occurrences`` times with ``seed``: what the encoding pass reads (counted and walked by ``mapper``, a
    worker pool's, when given)."""
    counts = count_words(iter_lines(paths), lowercase, mapper=mapper)
    vocab = build_vocabulary(counts, lowercase=lowercase, min_count=min_count)
    plan = plan_sample(vocab.counts, max_occurrences, seed)
    return iter_jobs(iter_lines(paths), vocab, plan, mapper=mapper or in_process)
