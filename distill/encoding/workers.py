"""Tokenizing and aligning chunks in a pool of worker processes, so that the host keeps ahead of a GPU.

The corpus walk stays in one process (sampling is sequential); each chunk of sampled sentences goes to a
worker that tokenizes it into windows, aligns every occurrence to its pieces and length-sorts the windows.
Chunks come back in order, a few in flight per worker. With no workers (a CPU run, whose cores run the
model) the chunks are prepared in the calling thread.

Chunks travel both ways as a few flat arrays, not as objects: pickling an object and a handful of small
arrays per sentence and per window cost the main process more than preparing the chunk itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from functools import partial
from itertools import chain
from typing import Any

import numpy as np

from distill.encoders.alignment import Window
from distill.encoding.prepare import EncodeStats, PreparedWindow, Tokenizing, bounds, prepare_chunk
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


def sort_prepared(model: Tokenizing, jobs: list[SentenceJob], stride: int) -> tuple[list[PreparedWindow], EncodeStats]:
    """One chunk's windows, aligned and sorted by length, and what preparing it counted."""
    counts = EncodeStats()
    prepared = prepare_chunk(model, jobs, stride, counts)
    prepared.sort(key=lambda p: len(p.window.ids))
    return prepared, counts


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


def _cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype)


def pack_prepared(prepared: list[PreparedWindow]) -> dict[str, Any]:
    """A chunk's prepared windows as flat arrays: what a worker sends back (sentences go by their index in
    the chunk; the caller holds their ids and texts)."""
    windows = [p.window for p in prepared]
    return {
        "sentence": [w.sentence for w in windows],
        "tokens": [len(w.ids) for w in windows],
        "occurrences": [len(p.rows) for p in prepared],
        "ids": np.fromiter(chain.from_iterable(w.ids for w in windows), np.int64),
        "starts": _cat([w.starts for w in windows], np.int64),
        "ends": _cat([w.ends for w in windows], np.int64),
        "content": _cat([w.content for w in windows], bool),
        "fresh": _cat([w.new_content for w in windows], bool),
        "rows": _cat([p.rows for p in prepared], np.int64),
        "tok": _cat([p.tok for p in prepared], np.int64),
        "pieces": _cat([p.pieces for p in prepared], np.int64),
    }


def unpack_prepared(packed: dict[str, Any], jobs: list[SentenceJob]) -> list[PreparedWindow]:
    t, o = bounds(packed["tokens"]), bounds(packed["occurrences"])
    ids, starts, ends, content, fresh = (packed[k] for k in ("ids", "starts", "ends", "content", "fresh"))
    rows, tok, pieces = packed["rows"], packed["tok"], packed["pieces"]
    piece_bounds = bounds(pieces.tolist())  # of each occurrence's pieces in tok
    prepared = []
    for i, sentence in enumerate(packed["sentence"]):
        a, b, lo, hi = t[i], t[i + 1], o[i], o[i + 1]
        window = Window(sentence, ids[a:b].tolist(), starts[a:b], ends[a:b], content[a:b], fresh[a:b])
        job = jobs[sentence]
        prepared.append(PreparedWindow(window, rows[lo:hi], tok[piece_bounds[lo] : piece_bounds[hi]],
                                       pieces[lo:hi], (job.sentence_id, job.text)))  # fmt: skip
    return prepared


def _prepare(
    tokenizer: Shared[Tokenizing], stride: int, packed: dict[str, Any] | None
) -> tuple[dict[str, Any], EncodeStats] | None:
    if packed is None:  # a chunk done before a checkpoint
        return None
    prepared, counts = sort_prepared(tokenizer.value, unpack_jobs(packed), stride)
    return pack_prepared(prepared), counts


def _packed(jobs: list[SentenceJob] | None) -> dict[str, Any] | None:
    return None if jobs is None else pack_jobs(jobs)


def prepared_chunks(
    model: Any, chunks: Iterable[list[SentenceJob] | None], stride: int, pool: WorkerPool | None = None
) -> Iterator[tuple[list[PreparedWindow], EncodeStats]]:
    """Each chunk prepared (:func:`sort_prepared`), in order; a ``None`` chunk (done before a checkpoint) gives
    no windows. With a ``pool``, chunks are prepared in its worker processes, when the model's tokenizer can be
    sent to one (``window_tokenizer``)."""
    if pool is None or not hasattr(model, "window_tokenizer"):
        for jobs in chunks:
            yield sort_prepared(model, jobs, stride) if jobs is not None else ([], EncodeStats())
        return
    prepare = partial(_prepare, Shared(model.window_tokenizer(stride)), stride)
    for jobs, result in with_items(pool.map, prepare, chunks, send=_packed):
        if jobs is None or result is None:
            yield [], EncodeStats()
        else:
            packed, counts = result
            yield unpack_prepared(packed, jobs), counts
