"""The schema of a run's ``manifest.json``: every field distill reads, checked once when the file is read.

A manifest is a file a user can edit, damage or craft; :func:`check_manifest` turns anything that is not a
manifest distill wrote into one line (ConfigError), and every file name it lists into a checked plain name,
before any command reads, writes or deletes a file by it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard

from distill.errors import ConfigError
from distill.files import bare_name
from distill.names import split_export_entry


def is_our_manifest(data: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a parsed ``manifest.json`` claims to be a distill run's (checked in full by :func:`check_manifest`)."""
    return isinstance(data, dict) and "distill_version" in data and isinstance(data.get("files"), list)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(_int(v) and v >= 0 for v in value)


def _strs(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _count(value: Any) -> bool:
    return _int(value) and value >= 0


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _dict(value: Any) -> bool:
    return isinstance(value, dict)


#: Field (dotted path) -> check, and whether it may be absent (older runs lack it).
_FIELDS: dict[str, tuple[Callable[[Any], bool], bool]] = {
    "distill_version": (lambda v: isinstance(v, str), False),
    "files": (_strs, False),
    "digests": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), True),
    "exports": (_strs, True),
    "exported_from": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), True),
    "layers": (_ints, False),
    "pooling": (_strs, False),
    "model": (_dict, False),
    "model.name": (lambda v: isinstance(v, str), False),
    "model.source": (lambda v: isinstance(v, str) and v != "", False),
    "model.revision": (_opt_str, True),
    "model.gguf_file": (_opt_str, True),
    "model.n_layers": (lambda v: _int(v) and v > 0, False),
    "model.hidden_size": (lambda v: _int(v) and v > 0, True),
    "model.dtype": (_opt_str, True),
    "corpus": (_dict, False),
    "corpus.files": (
        lambda v: isinstance(v, list) and all(_dict(f) and isinstance(f.get("path"), str) for f in v),
        False,
    ),
    "corpus.lines": (_count, False),
    "corpus.words": (_count, False),
    "vocabulary": (_dict, False),
    "vocabulary.size": (_count, False),
    "vocabulary.lowercase": (lambda v: isinstance(v, bool), False),
    "config": (_dict, False),
    "config.min_count": (_count, True),
    "config.max_occurrences": (_count, True),
    "config.seed": (_int, True),
    "config.corpus": (_strs, True),
    "config.pooling": (_strs, True),
    "derived": (lambda v: v is None or _dict(v), True),
    "best": (_opt_str, True),
    "timings_seconds": (lambda v: v is None or _dict(v), True),
    "analysis": (lambda v: v is None or _dict(v), True),
}


def _get(data: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    value: Any = data
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return False, None
        value = value[key]
    return True, value


def check_manifest(data: Any, path: Path) -> dict[str, Any]:
    """``data`` (a parsed ``manifest.json``) when it is a manifest distill wrote, every listed name a plain file
    name and the recommended set one of its sets; ConfigError naming the first field that is not."""
    if not is_our_manifest(data):
        raise ConfigError(f"{path} was not written by distill; {path.parent} is not a run folder")
    for dotted, (check, optional) in _FIELDS.items():
        found, value = _get(data, dotted)
        if (not found and not optional) or (found and not check(value)):
            what = "is missing" if not found else f"has a value of the wrong kind ({str(value)[:40]!r})"
            raise ConfigError(f"{path} is damaged: its field {dotted} {what}; run the distillation again")
    for name in data["files"]:
        bare_name(name, path)
    for name in [*data.get("exports", []), *data.get("exported_from", {})]:  # in the run folder, or its export/
        bare_name(split_export_entry(name)[1], path)
    for name in data.get("derived") or {}:
        bare_name(name, path)
    best = data.get("best")
    if best is not None and f"{bare_name(best, path)}.bin" not in data["files"]:
        raise ConfigError(f"{path} is damaged: its recommended set {best!r} is not one of its sets")
    return data
