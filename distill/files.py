"""Files written whole or not at all: atomic writes, JSON, sha256, writable-folder checks.

Every file is written under a temporary name in its final folder and renamed when complete, so a
crash or a full disk never leaves a half-written output behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from distill.errors import OutputError


def _output_error(path: Path, err: OSError) -> OutputError:
    if err.errno == errno.ENOSPC:
        return OutputError(f"disk full while writing {path}; free some space or choose another --out")
    return OutputError(f"cannot write {path}: {err.strerror or err}; choose another --out")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` if the block succeeds."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise _output_error(path, err) from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; it replaces ``path`` if the block succeeds."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise OutputError(f"{path} exists and is not a folder (a file or a link); remove it or choose another --out")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        yield tmp
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _output_error(path, err) from err
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_writable(directory: str | Path) -> Path:
    """Create ``directory`` and prove a file can be written there, before any slow work starts."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as err:
        raise OutputError(
            f"cannot write to the output folder {directory}: {err.strerror or err}; choose another --out"
        ) from err
    return directory


def write_json(data: dict[str, Any], path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    return Path(path)


def write_text(text: str, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
