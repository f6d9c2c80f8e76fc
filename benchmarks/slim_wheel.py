"""A wheel without the files a run never imports (test data, C sources), so that a GPU session's carry fits
the device's limit in one call.

    python benchmarks/slim_wheel.py WHEEL PREFIX [PREFIX ...]   # e.g. .whl/gensim-*.whl gensim/test/ .c .cpp .pyx

Rewrites WHEEL in place: every member whose path starts with a PREFIX ending in "/", or ends with any other
PREFIX, is left out, and so is its line in the wheel's RECORD.
"""

from __future__ import annotations

import os
import sys
import zipfile


def dropped(name: str, prefixes: list[str]) -> bool:
    return any(name.startswith(p) if p.endswith("/") else name.endswith(p) for p in prefixes)


def slim(wheel: str, prefixes: list[str]) -> tuple[int, int]:
    """Rewrite ``wheel`` without the members ``prefixes`` name; returns its sizes before and after."""
    before = os.path.getsize(wheel)
    tmp = f"{wheel}.tmp"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if dropped(info.filename, prefixes):
                continue
            data = source.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(line for line in lines if not dropped(line.split(",")[0], prefixes)).encode()
            target.writestr(info, data, zipfile.ZIP_DEFLATED)
    os.replace(tmp, wheel)
    return before, os.path.getsize(wheel)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    size, slimmed = slim(sys.argv[1], sys.argv[2:])
    print(f"{sys.argv[1]}: {size / 1e6:.1f} MB -> {slimmed / 1e6:.1f} MB")
