"""Iteration helpers (``itertools.batched`` comes with Python 3.12; this package supports 3.11)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], n: int) -> Iterator[list[T]]:
    """Lists of ``n`` consecutive items (the last one shorter)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, n)):
        yield chunk
