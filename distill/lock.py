"""A folder's lock: one file in it, held by one process at a time, removed when released.

A process that waited for the lock checks, once it holds it, that the file it locked is still the one at the
path (the holder it waited for may have removed it) and locks again if not: so the file can be removed on
release, and no folder keeps a lock file once its commands are done.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from distill.errors import OutputError

try:
    import fcntl
except ImportError:  # Windows: msvcrt's byte-range lock instead
    fcntl = None  # type: ignore[assignment]


def _lock(handle: IO[str], wait: bool) -> bool:
    """An exclusive lock on ``handle``'s file; without ``wait``, False when another process holds it."""
    if fcntl is not None:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True
    import msvcrt

    try:
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
    except OSError:
        return False
    return True


class FolderLock:
    """The lock file ``path``; :meth:`acquire` takes it, :meth:`release` removes it and lets go."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self, wait: bool) -> bool:
        """Take the lock (waiting for another holder with ``wait``); False when it is held and not ``wait``."""
        while True:
            try:
                handle = open(self.path, "a")  # noqa: SIM115  (held until release())
            except OSError as err:
                raise OutputError(
                    f"cannot write to {self.path.parent}: {err.strerror or err}; is it read-only?"
                ) from err
            if not _lock(handle, wait):
                handle.close()
                return False
            try:
                same = os.fstat(handle.fileno()).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._handle = handle
                return True
            handle.close()  # the holder we waited for removed that file: lock the one there now

    def release(self) -> None:
        """Remove the lock file and let go (the next holder locks a new one)."""
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._handle.close()
            self._handle = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for a block, waiting for it."""
        self.acquire(wait=True)
        try:
            yield
        finally:
            self.release()
