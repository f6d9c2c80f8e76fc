"""Tokenizing and aligning chunks in a pool of worker processes, so that the host keeps ahead of a GPU.

The corpus walk stays in one process (sampling is sequential); each chunk of sampled sentences goes to a
worker that tokenizes it into windows, aligns every occurrence to its pieces and length-sorts the windows.
Chunks come back in order, a few in flight per worker. With no workers (a CPU run, whose cores run the
model) the chunks are prepared in the calling thread.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from distill.encoding.prepare import EncodeStats, PreparedWindow, Tokenizing, prepare_chunk
from distill.occurrences import SentenceJob

_WORKER: dict[str, Any] = {}  # a worker process's tokenizer and stride


def default_workers(device_type: str) -> int:
    """Tokenizing processes when ``--tokenize-workers`` is not given: on a GPU, the cores but two (at most 16);
    on a CPU none (the cores run the model)."""
    if device_type != "cuda":
        return 0
    return max(1, min(16, usable_cores() - 2))


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def sort_prepared(model: Tokenizing, jobs: list[SentenceJob], stride: int) -> tuple[list[PreparedWindow], EncodeStats]:
    """One chunk's windows, aligned and sorted by length, and what preparing it counted."""
    counts = EncodeStats()
    prepared = prepare_chunk(model, jobs, stride, counts)
    prepared.sort(key=lambda p: len(p.window.ids))
    return prepared, counts


def _start(tokenizer: Tokenizing, stride: int) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread per worker: the pool is the parallelism
    _WORKER.update(tokenizer=tokenizer, stride=stride)


def _prepare(jobs: list[SentenceJob]) -> tuple[list[PreparedWindow], EncodeStats]:
    return sort_prepared(_WORKER["tokenizer"], jobs, _WORKER["stride"])


def prepared_chunks(
    model: Any, chunks: Iterable[list[SentenceJob] | None], stride: int, workers: int = 0
) -> Iterator[tuple[list[PreparedWindow], EncodeStats]]:
    """Each chunk prepared (:func:`sort_prepared`), in order; a ``None`` chunk (done before a checkpoint) gives
    no windows. ``workers`` > 0 prepares them in that many processes, when the model's tokenizer can be
    sent to one (``window_tokenizer``)."""
    if workers < 1 or not hasattr(model, "window_tokenizer"):
        for jobs in chunks:
            yield sort_prepared(model, jobs, stride) if jobs is not None else ([], EncodeStats())
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    pending: deque[Future[tuple[list[PreparedWindow], EncodeStats]] | None] = deque()
    with ProcessPoolExecutor(
        workers, context, initializer=_start, initargs=(model.window_tokenizer(stride), stride)
    ) as pool:
        for jobs in chunks:
            pending.append(pool.submit(_prepare, jobs) if jobs is not None else None)
            while len(pending) > 2 * workers:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())


def _result(
    future: Future[tuple[list[PreparedWindow], EncodeStats]] | None,
) -> tuple[list[PreparedWindow], EncodeStats]:
    return future.result() if future is not None else ([], EncodeStats())
