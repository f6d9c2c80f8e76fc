"""Copy the benchmark files distill's wheel ships (datasets.SHIPPED) from a data folder into the package.

``python scripts/ship_benchmarks.py DATA_DIR`` (``make wheel`` runs it): each file is checked against the
registry's sha256 first, so the wheel never ships a changed benchmark. The copies are not committed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from distill.evaluation.datasets import PACKAGED, REGISTRY, SHIPPED
from distill.files import sha256_file


def main(data: Path) -> None:
    expected = {b.path: b.sha256 for b in REGISTRY.values()}
    shutil.rmtree(PACKAGED, ignore_errors=True)
    for relative, licence in SHIPPED.items():
        source = data / relative
        if not source.is_file() or sha256_file(source) != expected[relative]:
            sys.exit(f"{source}: missing, or not the registry's file (sha256)")
        target = PACKAGED / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        print(f"shipped {relative} ({licence})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
