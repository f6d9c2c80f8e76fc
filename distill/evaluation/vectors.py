"""Read any static-vector file into gensim ``KeyedVectors``: word2vec text/binary or GloVe's header-less text.

The text reader is ours so that a corrupt or truncated file fails with the line at fault named; the
binary format goes through gensim. ``.gz`` works for both.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distill.config import Pooling
from distill.errors import ConfigError
from distill.manifest import check_manifest, is_our_manifest
from distill.names import BASELINES, MANIFEST, layer_file
from distill.rundir import RunDir, read_json_file
from distill.vectors.reader import read_vectors

logger = logging.getLogger(__name__)


@dataclass
class Vectors:
    """Vectors with what is known of where they came from (for the report)."""

    label: str
    kv: Any  # gensim KeyedVectors
    path: str
    meta: dict[str, Any] = field(default_factory=dict)


def _meta(path: Path) -> dict[str, Any]:
    """What the run folder's manifest says of this file: model, corpus, layer, pooling (empty if unknown). A
    manifest of ours with fields of the wrong kind is a ConfigError; another program's is passed over."""
    found = layer_file(path.name)
    for name in (MANIFEST, BASELINES):
        data = read_json_file(path.parent / name)  # none, or not JSON: it says nothing of the vectors
        if name == BASELINES:
            files = data.get("files") if isinstance(data, dict) else None
            entry = files.get(path.name) if isinstance(files, dict) else None
            if isinstance(entry, dict):
                return dict(entry, corpus=data.get("corpus"))
            continue
        if not is_our_manifest(data):
            continue
        data = check_manifest(data, path.parent / name)
        common = {
            "model": data["model"]["name"],
            "corpus": [Path(f["path"]).name for f in data["corpus"]["files"]],
        }
        if found:
            return {**common, "layer": found[0], "pooling": found[1].value}
        if path.name.removesuffix(path.suffix) in data.get("derived", {}):
            return {**common, "set": path.name.removesuffix(path.suffix)}
    return {}


def _run_file_order(path: Path) -> tuple[bool, str, int]:
    """The paper's pooling (pc) first, then by pooling name, then by layer."""
    layer, pooling = layer_file(path.name) or (0, Pooling.PC)
    return (pooling is not Pooling.PC, pooling.value, layer)


def _set_file(run: RunDir, name: str) -> Path:
    """The file a set is read from: its text file, or its binary one where the run wrote no text (--formats)."""
    text = run.file(name, ".txt")
    return text if text.is_file() else run.file(name, ".bin")


def check_set_of_runs(paths: Sequence[str | Path], vector_set: str | None) -> None:
    """A set asked for picks a set of run folders: ConfigError when none of ``paths`` is one (it would be ignored)."""
    if vector_set is not None and not any(Path(p).is_dir() and RunDir(p).is_run() for p in paths):
        raise ConfigError(
            f"--set {vector_set} picks a set of a run folder, and no input is one: give the run folder, or the file "
            "without --set"
        )


def expand_paths(paths: list[str | Path], vector_set: str | None = None) -> list[Path]:
    """Files as given; a run folder stands for one set (``vector_set``: a name, or ``best``) or for all of its
    sets: its ``layerL.P.txt`` files in layer order, then its derived sets (a run folder must be complete:
    its manifest lists exactly its vector files)."""
    check_set_of_runs(paths, vector_set)
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir() and RunDir(p).is_run() and vector_set is not None:
            run = RunDir(p)
            out.append(_set_file(run, run.resolve_set(vector_set)))
        elif p.is_dir():
            derived: list[str] = []
            if any(layer_file(f.name) for f in p.iterdir()):
                derived = list(RunDir(p).check_complete().get("derived", {}))
            sets = {f.name.removesuffix(f.suffix) for f in p.iterdir() if layer_file(f.name)}  # .txt, .bin or both
            files = sorted((_set_file(RunDir(p), name) for name in sets), key=_run_file_order)
            files += [_set_file(RunDir(p), name) for name in derived]
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
        elif "set" in meta:
            label = f"{Path(str(meta['model'])).name} {meta['set']}"
        elif "method" in meta:
            label = f"{meta['method']} ({'+'.join(meta.get('corpus') or [])})"
        else:
            label = path.name
    meta["vocab_size"] = len(kv.index_to_key)  # the file's own words (a derived set may add some)
    meta["dim"] = kv.vector_size
    return Vectors(label=label, kv=kv, path=str(path), meta=meta)
