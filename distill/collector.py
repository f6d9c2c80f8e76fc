"""Python's cyclic garbage collector on the host path.

The host prepares a million small objects a second for the model (windows, offset tuples, jobs). Each
wave of them sets off collections, and a full collection walks every object the process holds:
after importing torch and transformers, millions. Both helpers keep those walks off the hot path;
reference counting still frees everything that holds no cycle, which is all the host path makes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for a moment: while one batch's offsets and windows are read."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def heap_frozen() -> Iterator[None]:
    """Every object alive now (the model, the libraries, the vocabulary) left out of collections until the
    block ends (``gc.freeze``), so the collections the encoding pass sets off walk only what it made."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
