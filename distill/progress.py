"""Progress on long work: tqdm bars on a terminal; in a log (stderr not a terminal), one line every few seconds."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

#: Seconds between two progress lines in a log.
LOG_EVERY = 10.0


class LogProgress:
    """The part of tqdm's interface distill uses, writing a plain line every ``every`` seconds."""

    def __init__(
        self, total: int | None, desc: str, unit: str, initial: int = 0, every: float = LOG_EVERY,
        file: TextIO | None = None,
    ) -> None:  # fmt: skip
        self.total, self.desc, self.unit, self.every = total, desc, unit.strip(), every
        self.n = self.initial = initial
        self.file = file
        self.postfix = ""
        self.start = self.last = time.monotonic()
        self.shown: int | None = None  # the count the last line gave

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self.last >= self.every:
            self._write()

    def set_postfix(self, refresh: bool = False, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        long_enough = self.last != self.start or time.monotonic() - self.start >= self.every
        if long_enough and self.shown != self.n:
            self._write()  # a closing line for work long enough to have been reported, unless the last line was it

    def _write(self) -> None:
        self.last, self.shown = time.monotonic(), self.n
        done = f"{self.n:,}" + (f"/{self.total:,} ({100 * self.n / max(self.total, 1):.0f}%)" if self.total else "")
        extra = f", {self.postfix}" if self.postfix else ""
        elapsed = self.last - self.start
        print(
            f"{self.desc}: {done} {self.unit}, {elapsed:.0f} s{self._eta(elapsed)}{extra}", file=self.file or sys.stderr
        )

    def _eta(self, elapsed: float) -> str:
        """``, ETA 12 min``: the time left at the average rate since the start ("" before any work or a total)."""
        if not self.total or self.n <= self.initial or self.n >= self.total or elapsed <= 0:
            return ""
        left = (self.total - self.n) * elapsed / (self.n - self.initial)
        return f", ETA {duration(left)}"


def duration(seconds: float) -> str:
    """``40 s``, ``12 min``, ``2 h 05 min``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def progress_bar(total: int | None = None, desc: str = "", unit: str = "it", disable: bool = False,
                 initial: int = 0) -> Any:  # fmt: skip
    """A tqdm bar when stderr is a terminal, a :class:`LogProgress` otherwise, or a silent one (``disable``).
    Both give the time left at the average rate since the start (tqdm's ``smoothing=0``): the rate of the
    first batches alone misleads."""
    from tqdm.auto import tqdm

    if disable or sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, disable=disable, initial=initial, dynamic_ncols=True,
                    smoothing=0)  # fmt: skip
    return LogProgress(total, desc, unit, initial)


def track(
    items: Iterable[Any], desc: str, unit: str = "it", total: int | None = None, disable: bool = False
) -> Iterator[Any]:
    """Iterate ``items`` with progress."""
    bar = progress_bar(total, desc, unit, disable)
    try:
        for item in items:
            yield item
            bar.update(1)
    finally:
        bar.close()
