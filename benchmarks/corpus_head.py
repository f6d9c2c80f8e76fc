"""The first lines of a corpus as a file of their own: the slice a benchmark runs on."""

from __future__ import annotations

from pathlib import Path


def write_head(source: str | Path, lines: int, target: Path) -> Path:
    """Write the first ``lines`` lines of ``source`` to ``target``; returns ``target``."""
    with open(source, encoding="utf-8") as handle:
        target.write_text("".join(line for _, line in zip(range(lines), handle)), encoding="utf-8")
    return target
