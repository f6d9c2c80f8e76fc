"""Chunks of sentences made into batches in a pool of worker processes, so that the host keeps ahead of a GPU.

The corpus walk picks the sentences in one process (sampling is sequential); each chunk of sampled sentences
goes to a worker that tokenizes it into windows, aligns every occurrence to its pieces, length-sorts the
windows and cuts them into batches. Chunks come back in order, a few in flight per worker. With no workers (a
CPU run, whose cores run the model) the chunks are prepared in the calling thread.

Chunks travel both ways as a few flat arrays, not as objects: a chunk's sentences as arrays, its batches as
:class:`~distill.encoding.prepare.Batch` arrays, so that the main process builds no object per window.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from distill.encoding.prepare import (
    Batch,
    EncodeStats,
    PreparedWindow,
    Tokenizing,
    bounds,
    cut_batches,
    make_batch,
    prepare_sorted,
)
from distill.occurrences import SentenceJob
from distill.parallel import Shared, WorkerPool, with_items


def default_workers(device_type: str) -> int:
    """Tokenizing processes when ``--tokenize-workers`` is not given: on a GPU, the cores but two (at most 16);
    on a CPU none (the cores run the model)."""
    if device_type != "cuda":
        return 0
    return max(1, min(16, usable_cores() - 2))


@contextlib.contextmanager
def given_or_own_pool(pool: WorkerPool | None, workers: int | None, device_type: str) -> Iterator[WorkerPool | None]:
    """``pool`` when given; else a pool of ``workers`` processes (None: the device's default,
    :func:`default_workers`) closed on leaving, or None for no worker."""
    if pool is not None:
        yield pool
        return
    workers = default_workers(device_type) if workers is None else workers
    if not workers:
        yield None
        return
    with WorkerPool(workers) as own:
        yield own


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def writer_threads() -> int:
    """Threads that write a run's files while the next is computed: numpy formats and the files are written
    without the GIL, so a many-core machine (a GPU's host) writes several at once; half the cores, at most 8, so
    that a 2-core one keeps a core for the work."""
    return max(1, min(8, usable_cores() // 2))


def sort_prepared(model: Tokenizing, jobs: list[SentenceJob], stride: int) -> tuple[list[PreparedWindow], EncodeStats]:
    """One chunk's windows, aligned and sorted by length, and what preparing it counted."""
    counts = EncodeStats()
    return prepare_sorted(model, jobs, stride, counts), counts


@dataclass(frozen=True)
class Batching:
    """How a chunk's windows are cut: ``budget`` padded tokens a batch, else ``size`` windows."""

    size: int = 64
    budget: int | None = None


def chunk_batches(
    model: Tokenizing, jobs: list[SentenceJob], stride: int, batching: Batching
) -> tuple[list[Batch], EncodeStats]:
    """One chunk's batches (:func:`sort_prepared`, cut as ``batching`` says), and what preparing it counted."""
    prepared, counts = sort_prepared(model, jobs, stride)
    return [make_batch(cut, jobs) for cut in cut_batches(prepared, batching.size, batching.budget)], counts


def pack_jobs(jobs: list[SentenceJob]) -> dict[str, Any]:
    """A chunk of sentences as flat arrays: what a worker is sent."""
    return {
        "ids": [job.sentence_id for job in jobs],
        "texts": [job.text for job in jobs],
        "sizes": [len(job.rows) for job in jobs],
        **{k: np.concatenate([getattr(job, k) for job in jobs]) for k in ("starts", "ends", "rows")},
    }


def unpack_jobs(packed: dict[str, Any]) -> list[SentenceJob]:
    b = bounds(packed["sizes"])
    starts, ends, rows = packed["starts"], packed["ends"], packed["rows"]
    return [
        SentenceJob(sid, text, starts[lo:hi], ends[lo:hi], rows[lo:hi])
        for sid, text, lo, hi in zip(packed["ids"], packed["texts"], b[:-1], b[1:])
    ]


def _prepare(
    tokenizer: Shared[Tokenizing], stride: int, batching: Batching, packed: dict[str, Any] | None
) -> tuple[list[Batch], EncodeStats] | None:
    if packed is None:  # a chunk done before a checkpoint
        return None
    batches, counts = chunk_batches(tokenizer.value, unpack_jobs(packed), stride, batching)
    for batch in batches:
        batch.jobs = ()  # the caller holds them
    return batches, counts


def _packed(jobs: list[SentenceJob] | None) -> dict[str, Any] | None:
    return None if jobs is None else pack_jobs(jobs)


def prepared_batches(
    model: Any,
    chunks: Iterable[list[SentenceJob] | None],
    stride: int,
    batching: Batching,
    pool: WorkerPool | None = None,
) -> Iterator[tuple[list[Batch], EncodeStats]]:
    """Each chunk's batches (:func:`chunk_batches`), in order; a ``None`` chunk (done before a checkpoint) gives
    none. With a ``pool``, chunks are prepared in its worker processes, when the model's tokenizer can be sent to
    one (``window_tokenizer``)."""
    if pool is None or not hasattr(model, "window_tokenizer"):
        for jobs in chunks:
            yield chunk_batches(model, jobs, stride, batching) if jobs is not None else ([], EncodeStats())
        return
    prepare = partial(_prepare, Shared(model.window_tokenizer(stride)), stride, batching)
    for jobs, result in with_items(pool.map, prepare, chunks, send=_packed):
        if jobs is None or result is None:
            yield [], EncodeStats()
            continue
        batches, counts = result
        for batch in batches:
            batch.jobs = jobs
        yield batches, counts
