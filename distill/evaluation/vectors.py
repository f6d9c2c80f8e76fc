"""Read any static-vector file into gensim ``KeyedVectors``: word2vec text/binary or GloVe's header-less text.

The text reader is ours so that a corrupt or truncated file fails with the line at fault named; the
binary format goes through gensim. ``.gz`` works for both.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import ConfigError
from distill.export import to_keyed_vectors

logger = logging.getLogger(__name__)

_RUN_FILE = re.compile(r"^layer(\d+)\.(\w+)\.(txt|bin)$")


@dataclass
class Vectors:
    """Vectors with what is known of where they came from (for the report)."""

    label: str
    kv: Any  # gensim KeyedVectors
    path: str
    meta: dict[str, Any] = field(default_factory=dict)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:  # type: ignore[operator]
        for line_no, raw in enumerate(handle, start=1):
            try:
                yield line_no, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ConfigError(f"{path}, line {line_no}: bytes that are not UTF-8; is this a binary file?") from err


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
        parts = text.rsplit(None, dim)  # the word may hold spaces (GloVe 840B has a few such tokens)
        if len(parts) != dim + 1 or not parts[0]:
            raise ConfigError(
                f"{path}, line {line_no}: expected a word and {dim} numbers, found {len(text.split()) - 1}; "
                "the file is corrupt or not in word2vec/GloVe text format"
            )
        try:
            vector = np.array(parts[1:], dtype=np.float32)
        except ValueError as err:
            bad = next(p for p in parts[1:] if not _is_float(p))
            raise ConfigError(f"{path}, line {line_no}: {bad!r} is not a number") from err
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


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_vectors(path: str | Path) -> Any:
    """KeyedVectors from a ``.bin`` (word2vec binary) or any text file (word2vec or GloVe), ``.gz`` or not."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"vector file {path} not found")
    binary = path.name.endswith((".bin", ".bin.gz"))
    if not binary:
        return read_text_vectors(path)
    from gensim.models import KeyedVectors

    try:
        return KeyedVectors.load_word2vec_format(str(path), binary=True)
    except (ValueError, EOFError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} is not a readable word2vec binary file ({err}); is it truncated?") from err


def _meta(path: Path) -> dict[str, Any]:
    """What the run folder's manifest says of this file: model, corpus, layer, pooling (empty if unknown)."""
    match = _RUN_FILE.match(path.name)
    for name in ("manifest.json", "baselines.json"):
        manifest = path.parent / name
        if not manifest.is_file():
            continue
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if name == "baselines.json":
            return dict(data.get("files", {}).get(path.name, {}), corpus=data.get("corpus"))
        if match:
            return {
                "model": data["model"]["name"],
                "corpus": [Path(f["path"]).name for f in data["corpus"]["files"]],
                "layer": int(match.group(1)),
                "pooling": match.group(2),
                "vocab_size": data["vocabulary"]["size"],
            }
    return {}


def _run_file_order(path: Path) -> tuple[int, str, int]:
    """The paper's pooling (pc) first, then by pooling name, then by layer."""
    layer, pooling = _RUN_FILE.match(path.name).groups()[:2]  # type: ignore[union-attr]
    return (pooling != "pc", pooling, int(layer))


def expand_paths(paths: list[str | Path]) -> list[Path]:
    """Files as given; a run folder stands for all of its ``layerL.P.txt`` files, in layer order."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(
                (f for f in p.iterdir() if _RUN_FILE.match(f.name) and f.suffix == ".txt"),
                key=_run_file_order,
            )
            files += sorted(p.glob("*.vec.txt"))
            if not files:
                raise ConfigError(f"{p} holds no layerL.P.txt or *.vec.txt vector files")
            out.extend(files)
        else:
            out.append(p)
    return out


def load_vectors(path: str | Path, label: str | None = None) -> Vectors:
    """Read a vector file with its provenance; the label defaults to what the manifest says."""
    path = Path(path)
    kv = read_vectors(path)
    meta = _meta(path)
    if label is None:
        if "layer" in meta:
            label = f"{Path(str(meta['model'])).name} L{meta['layer']} {meta['pooling']}"
        elif "method" in meta:
            label = f"{meta['method']} ({'+'.join(meta.get('corpus') or [])})"
        else:
            label = path.name
    meta.setdefault("vocab_size", len(kv.index_to_key))
    meta["dim"] = kv.vector_size
    return Vectors(label=label, kv=kv, path=str(path), meta=meta)
