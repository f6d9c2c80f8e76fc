"""Read any static-vector file into gensim ``KeyedVectors``: word2vec text/binary or GloVe's header-less text.

The text reader is ours so that a corrupt or truncated file fails with the line at fault named; the
binary format goes through gensim. ``.gz`` works for both.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from distill.errors import ConfigError
from distill.files import READ_ERRORS, compressed_advice
from distill.vectors.keyed import to_keyed_vectors

logger = logging.getLogger(__name__)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    line_no, head = 0, b""
    try:
        with opener(path, "rb") as handle:  # type: ignore[operator]
            for line_no, raw in enumerate(handle, start=1):
                head = raw if line_no == 1 else head
                try:
                    yield line_no, raw.decode("utf-8-sig" if line_no == 1 else "utf-8")  # a BOM is no part of a word
                except UnicodeDecodeError as err:
                    raise ConfigError(_not_text(path, line_no, head)) from err
    except READ_ERRORS as err:
        raise ConfigError(
            f"{path}, after line {line_no}: cannot read on ({err or type(err).__name__}); the file is damaged or "
            "truncated"
        ) from err


def _not_text(path: Path, line_no: int, head: bytes) -> str:
    advice = compressed_advice(str(path), head, (".gz",))  # vector files are read plain or gzipped
    return advice or f"{path}, line {line_no}: bytes that are not UTF-8; is this a binary file?"


def _header(first: str) -> tuple[int, int] | None:
    fields = first.split()
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        return int(fields[0]), int(fields[1])
    return None


def read_text_vectors(path: str | Path) -> Any:
    """A word2vec text file (``count dim`` header) or a GloVe file (no header: ``word v1 ... vd`` lines)."""
    path = Path(path)
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    duplicates = 0
    header: tuple[int, int] | None = None
    dim = 0
    lines = _lines(path)
    for line_no, line in lines:
        text = line.rstrip()
        if not text:
            continue
        if line_no == 1 and (header := _header(text)) is not None:
            dim = header[1]
            continue
        if dim == 0:
            dim = len(text.split()) - 1  # GloVe: the first vector line tells the dimension
            if dim < 1:
                raise ConfigError(f"{path}, line {line_no}: expected a word and its numbers, got {text[:80]!r}")
        parts, vector = _parse_line(text, dim, f"{path}, line {line_no}")
        if parts[0] in seen:
            duplicates += 1
            continue
        seen.add(parts[0])
        words.append(parts[0])
        rows.append(vector)
    if not words:
        raise ConfigError(f"{path} holds no vectors")
    if header is not None and len(words) + duplicates != header[0]:
        raise ConfigError(
            f"{path}: its header announces {header[0]} vectors but the file holds {len(words) + duplicates}; "
            "the file is truncated or its header is wrong"
        )
    if duplicates:
        logger.warning("%s: %d duplicate words; the first vector of each was kept", path, duplicates)
    return to_keyed_vectors(words, np.vstack(rows))


def _check_binary_header(path: Path) -> None:
    """A word2vec binary file's ``count dim`` header, checked against the file's size before gensim
    allocates what the header announces."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:  # type: ignore[operator]
            first = handle.readline(100)
    except READ_ERRORS as err:
        raise ConfigError(f"{path}: cannot read it ({err or type(err).__name__}); is it damaged?") from err
    fields = first.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields) or int(fields[1]) == 0:
        raise ConfigError(f"{path} does not start with a word2vec binary header (count dim); is it a vector file?")
    count, dim = int(fields[0]), int(fields[1])
    if path.suffix != ".gz" and count * (dim * 4 + 2) > path.stat().st_size:
        raise ConfigError(
            f"{path}: its header announces {count:,} vectors of {dim} numbers, more than the file holds; "
            "the file is truncated or not a word2vec binary file"
        )


def _parse_line(text: str, dim: int, where: str) -> tuple[list[str], np.ndarray]:
    """A vector line's word (and numbers as text) and its float32 vector; ConfigError saying what is wrong."""
    parts = text.rsplit(None, dim)  # the word may hold spaces (GloVe 840B has a few such tokens)
    if len(parts) != dim + 1 or not parts[0]:
        raise ConfigError(
            f"{where}: expected a word and {dim} numbers, found {len(text.split()) - 1}; "
            "the file is corrupt or not in word2vec/GloVe text format"
        )
    try:
        with np.errstate(over="ignore"):  # a number beyond float32 becomes infinity, refused below
            vector = np.array(parts[1:], dtype=np.float32)
    except ValueError as err:
        bad = next(p for p in parts[1:] if not _is_float(p))
        raise ConfigError(f"{where}: {bad!r} is not a number") from err
    if not np.isfinite(vector).all():
        raise ConfigError(f"{where}: the vector of {parts[0]!r} holds NaN, infinity or a number beyond float32")
    return parts, vector


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_vector_file(path: str | Path) -> Path:
    """``path``, a regular file; ConfigError naming it otherwise (before anything slow reads it)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"vector file {path} {'is not a regular file' if path.exists() else 'not found'}")
    return path


def read_vectors(path: str | Path) -> Any:
    """KeyedVectors from a ``.bin`` (word2vec binary) or any text file (word2vec or GloVe), ``.gz`` or not."""
    path = check_vector_file(path)
    binary = path.name.endswith((".bin", ".bin.gz"))
    if not binary:
        return read_text_vectors(path)
    from gensim.models import KeyedVectors

    _check_binary_header(path)
    try:
        kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
    except (ValueError, UnicodeDecodeError, *READ_ERRORS) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(f"{path} is not a readable word2vec binary file ({reason}); is it truncated?") from err
    bad = np.flatnonzero(~np.isfinite(kv.vectors).all(axis=1))
    if len(bad):
        raise ConfigError(f"{path}: the vector of {kv.index_to_key[bad[0]]!r} (row {bad[0] + 1}) holds NaN or infinity")
    return kv
