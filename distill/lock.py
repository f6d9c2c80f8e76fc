"""A folder's lock: one file in it, held by one process at a time, removed when released.

A process that waited for the lock checks, once it holds it, that the file it locked is still the one at the
path (the holder it waited for may have removed it) and locks again if not: so the file can be removed on
release, and no folder keeps a lock file once its commands are done. The thread that holds a lock may take it
again by waiting for it (a step of a run that changes the run's manifest): that inner hold lets nothing go.
"""

from __future__ import annotations

import contextlib
import os
import threading
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


_held: set[tuple[str, int]] = set()  # (lock file, thread) of each lock this process holds


class FolderLock:
    """The lock file ``path``; :meth:`acquire` takes it, :meth:`release` removes it and lets go."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None
        self._key = ("", 0)  # (lock file, thread) once acquired
        self._nested = False

    def acquire(self, wait: bool) -> bool:
        """Take the lock (waiting for another holder with ``wait``); False when it is held and not ``wait``."""
        key = (os.path.realpath(self.path), threading.get_ident())
        if wait and key in _held:  # this thread holds it already
            self._nested = True
            return True
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
                self._key = key
                _held.add(key)
                return True
            handle.close()  # the holder we waited for removed that file: lock the one there now

    def release(self) -> None:
        """Remove the lock file and let go (the next holder locks a new one); an inner hold lets nothing go."""
        if self._nested:
            self._nested = False
        elif self._handle is not None:
            _held.discard(self._key)
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
