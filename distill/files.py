"""Files written whole or not at all, and only inside the folder a command was given.

Every file is written under a temporary name in its final folder and renamed when complete, so a
crash or a full disk never leaves a half-written output behind. Every name read from a manifest or a
folder goes through :func:`member` before anything reads, writes or deletes it: a plain file name (no
separator, no ``..``, not absolute) that is no symbolic link, so nothing is ever reached outside the
folder. A folder is replaced only when every file in it is one its own listing (``export.json``) names.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import lzma
import math
import os
import shutil
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from distill.errors import ConfigError, OutputError


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


#: The listing in a folder distill wrote whole (an export): ``{"files": [relative paths], ...}``.
LISTING = "export.json"


def is_bare_name(name: object) -> bool:
    """Whether ``name`` is a plain file name: a non-empty string with no separator, not ``.`` or ``..``."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and not any(c in name for c in "/\\\0\n")
        and not os.path.isabs(name)
    )


def bare_name(name: object, where: str | Path) -> str:
    """``name`` if it is a plain file name (:func:`is_bare_name`); ConfigError naming ``where`` (the manifest or
    folder it came from) otherwise."""
    if not is_bare_name(name):
        raise ConfigError(f"{where} names {name!r}, which is not a plain file name; it is damaged or not distill's")
    return str(name)


def member(folder: str | Path, name: object, where: str | Path | None = None) -> Path:
    """``folder/name`` for a plain file ``name`` that is not a symbolic link: the only way a name read from a
    manifest or a folder becomes a path (distill never follows a link out of a folder it reads or writes)."""
    path = Path(folder) / bare_name(name, where or folder)
    if path.is_symlink():
        raise ConfigError(f"{path} is a symbolic link; distill never follows links in its folders: remove it")
    return path


def subfolder(folder: str | Path, name: str) -> Path:
    """``folder/name`` for a folder (which callers make where missing); ConfigError when it is a link or a file."""
    path = member(folder, name)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is a file, not a folder; remove it or choose another --out")
    return path


def listed_contents(folder: Path) -> list[str]:
    """Every file under ``folder``, as sorted relative POSIX paths; ConfigError for a link inside."""
    names = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise ConfigError(f"{path} is a symbolic link; distill never follows links in its folders: remove it")
        if path.is_file():
            names.append(path.relative_to(folder).as_posix())
    return names


def is_replaceable(path: Path) -> bool:
    """Whether ``path`` may be replaced: absent, empty, or a real folder every file of which its own listing
    (``export.json``, written by distill) names."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        return False
    if not path.exists():
        return True
    try:
        found = listed_contents(path)
    except ConfigError:
        return False
    if not found:
        return True
    listing = path / LISTING
    try:
        data = json.loads(listing.read_text(encoding="utf-8")) if listing.is_file() else None
    except (ValueError, UnicodeDecodeError, OSError):
        return False
    listed = data.get("files") if isinstance(data, dict) else None
    return isinstance(listed, list) and set(found) <= {*listed, LISTING}


def check_replaceable(path: Path, error: type[Exception], done: str) -> None:
    """``error`` unless ``path`` may be replaced by a folder distill writes whole (:func:`is_replaceable`), saying
    why: it is a file or a link, or it holds files distill did not ``done`` (write, export)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise error(f"{path} exists and is not a folder: it is a file or a link; remove it or choose another --out")
    if not is_replaceable(path):
        raise error(f"{path} holds files that distill did not {done}; remove them or choose another --out")


def read_model_json(path: Path) -> Any:
    """A model folder's JSON file; ConfigError naming it when it cannot be read or is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path} cannot be read ({err}); the model folder is damaged") from err


def add_to_listing(folder: Path, written: Sequence[Path]) -> None:
    """List the files ``written`` into an export ``folder`` (a report) in its ``export.json``, so that the export
    stays one distill may replace; nothing for a folder without a listing distill wrote."""
    listing = member(folder, LISTING)
    try:
        data = json.loads(listing.read_text(encoding="utf-8")) if listing.is_file() else None
    except (ValueError, UnicodeDecodeError, OSError):
        return
    if isinstance(data, dict) and isinstance(data.get("files"), list):
        data["files"] = sorted({*data["files"], *(p.name for p in written if p.parent == folder)})
        write_json(data, listing)


def list_folder(folder: Path) -> None:
    """Record every file of ``folder`` in its listing (``export.json``), so a later run may replace it."""
    listing = folder / LISTING
    data = json.loads(listing.read_text(encoding="utf-8")) if listing.is_file() else {}
    data["files"] = [name for name in listed_contents(folder) if name != LISTING]
    write_json(data, listing)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; it replaces ``path`` if the block succeeds. An existing
    ``path`` is replaced only when :func:`is_replaceable` (nothing distill did not write is lost), and the new
    folder's files are listed in its ``export.json``."""
    path = Path(path)
    check_replaceable(path, OutputError, "write")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    if tmp.is_symlink() or tmp.is_file():
        tmp.unlink()
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        yield tmp
        list_folder(tmp)
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


@contextlib.contextmanager
def output_folder(directory: str | Path) -> Iterator[Path]:
    """``directory`` made and proved writable (:func:`check_writable`) before the block's slow work; the folders
    this made are removed again, where still empty, when the block fails: a refused command leaves none."""
    path, made = Path(directory), []
    probe = path
    while not probe.exists() and not probe.is_symlink() and probe != probe.parent:
        made.append(probe)  # deepest first
        probe = probe.parent
    try:
        yield check_writable(path)
    except BaseException:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


#: The first bytes of compressed data: its kind and usual suffix.
_MAGIC = {
    b"\x1f\x8b": ("gzip", ".gz"),
    b"BZh": ("bzip2", ".bz2"),
    b"\xfd7zXZ\x00": ("xz", ".xz"),
    b"\x28\xb5\x2f\xfd": ("zstd", ".zst"),
    b"PK\x03\x04": ("zip", ".zip"),
}


#: What reading a damaged or truncated file raises, compressed or not.
READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


def compressed_kind(head: bytes) -> tuple[str, str] | None:
    """The kind and usual suffix of compressed data that starts with ``head``, if it is compressed data: what a
    file that is not UTF-8 may be instead."""
    return next((found for magic, found in _MAGIC.items() if head.startswith(magic)), None)


def compressed_advice(name: str, head: bytes, readable: Sequence[str]) -> str | None:
    """What to do with input ``name``, which is not text, if its first bytes (``head``) are compressed data: name
    it for its kind where the reader reads that kind (``readable``: suffixes), else decompress it."""
    found = compressed_kind(head)
    if found is None:
        return None
    kind, suffix = found
    if suffix in readable:
        return f"{name} is {kind}-compressed data: give it a name that ends in {suffix} to have it read"
    return (
        f"{name} is {kind}-compressed data, which distill does not read there: decompress it, or compress it as "
        + " or ".join(readable)
    )


def write_json(data: dict[str, Any], path: str | Path) -> Path:
    """``data`` as standard JSON: a value that is not a finite number (a score of no pair, a loss before the first
    step) is written ``null``, as JSON has no NaN or Infinity and strict readers (a browser's, serde) refuse them."""
    text = json.dumps(_finite(data), indent=2, sort_keys=False, default=str, allow_nan=False)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")
    return Path(path)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_text(text: str, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def read_npz(path: str | Path, needs: Sequence[str] = ()) -> dict[str, Any]:
    """The arrays of an ``.npz`` file (no pickled objects: such a file is refused, never run), each of ``needs``
    present; ConfigError naming the file when it is truncated, damaged or foreign."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
        why = "holds pickled objects, which distill never loads" if "pickle" in str(err) else "is truncated or damaged"
        raise ConfigError(f"{path} {why}; make it again") from err
    missing = [name for name in needs if name not in arrays]
    if missing:
        raise ConfigError(f"{path} has no array {missing[0]!r}; it is not the file distill wrote: make it again")
    return arrays


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
