"""Host work spread over worker processes, results in order: what keeps a GPU fed (counting the corpus,
finding the vocabulary's words in it, tokenizing). No torch here: a worker imports only what its task needs.

A :class:`Mapper` is how a step asks for its blocks to be worked on: ``mapper(fn, items)`` yields ``fn(item)``
for each item, in order. :func:`in_process` does it in the calling process; :class:`WorkerPool` in worker
processes, a few items in flight per worker. ``fn`` and the items go to a worker pickled: ``fn`` is a
module-level function, or a :func:`functools.partial` of one, whose large arguments are :class:`Shared`.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Mapper(Protocol):
    """``mapper(fn, items)``: ``fn(item)`` for each item, in order."""

    def __call__(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]: ...


def in_process(fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
    """The :class:`Mapper` that works in the calling process."""
    return map(fn, items)


def with_items(
    mapper: Mapper, fn: Callable[[Any], R], items: Iterable[T], send: Callable[[T], Any] | None = None
) -> Iterator[tuple[T, R]]:
    """Each item with ``fn`` of it (of ``send(item)``, the form it travels in, when given), in order."""
    held: deque[T] = deque()

    def hold() -> Iterator[Any]:
        for item in items:
            held.append(item)
            yield item if send is None else send(item)

    for result in mapper(fn, hold()):
        yield held.popleft(), result


#: A worker's copies of the :class:`Shared` values its tasks named, by key (the latest only).
_SHARED: dict[str, Any] = {}


class Shared(Generic[T]):
    """A value that every task of a pool needs (a vocabulary's index, a tokenizer): pickled once here, and
    unpickled once per worker process, which keeps it while the tasks it is sent name the same value."""

    def __init__(self, value: T) -> None:
        self.value = value
        self.key = uuid.uuid4().hex
        self._payload: bytes | None = None

    def __getstate__(self) -> dict[str, Any]:
        if self._payload is None:
            self._payload = pickle.dumps(self.value, protocol=pickle.HIGHEST_PROTOCOL)
        return {"key": self.key, "payload": self._payload}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.key, self._payload = state["key"], None
        if state["key"] not in _SHARED:
            if len(_SHARED) > 4:  # a worker outlives its tasks' values: keep a few only
                _SHARED.clear()
            _SHARED[state["key"]] = pickle.loads(state["payload"])
        self.value = _SHARED[state["key"]]


def _start_worker() -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread per worker: the pool is the parallelism


class WorkerPool:
    """``workers`` processes (forkserver where there is one, else spawn) that map blocks in order
    (:meth:`map`, a :class:`Mapper`). Started when made, so that they are ready when the first block comes."""

    def __init__(self, workers: int) -> None:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        self.workers = workers
        self.executor = ProcessPoolExecutor(workers, context, initializer=_start_worker)
        for _ in range(workers):  # every process started now, while the caller does other work
            self.executor.submit(os.getpid)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for each item, in order, at most two items per worker in flight; a consumer that stops
        early cancels the rest."""
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                pending.append(self.executor.submit(fn, item))
                while len(pending) > 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
