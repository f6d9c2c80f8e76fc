"""The base of every option's enum: a str whose text, printed or formatted, is its value."""

from __future__ import annotations

import enum


class Choice(str, enum.Enum):
    """``f"{Pooling.MEAN}"`` is ``mean`` on every Python (3.11's mixed-in enums print ``Pooling.MEAN``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
