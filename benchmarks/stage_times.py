"""One run's stage times, for comparing two versions of the code side by side on one machine.

    PYTHONPATH=<a checkout> python benchmarks/stage_times.py --model DIR --corpus FILE [--workers N] [--chunk-size N]

Distils every layer (mean pooling) of ``--model`` on ``--corpus`` with the ``distill`` that ``PYTHONPATH`` finds
first, and prints which checkout that was, the wall time and the manifest's stage times. Run it once per
checkout in the same device call: only figures taken side by side compare.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import distill

if __name__ == "__main__":  # the tokenizing workers re-import this module: run only in the parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=None, help="tokenizing processes (default: the run's)")
    parser.add_argument("--chunk-size", type=int, default=65536)
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="distill-stages-") as tmp:
        manifest = distill.run(model=args.model, corpus=args.corpus, layers="all", pooling="mean",
                               device=args.device, chunk_size=args.chunk_size, tokenize_workers=args.workers,
                               progress=False, out=f"{tmp}/run").manifest  # fmt: skip
    print(f"{distill.__file__}: wall {time.perf_counter() - t0:.1f} s, tokens {manifest['encoding']['tokens']:,}, "
          f"stages {json.dumps(manifest['timings_seconds'])}")  # fmt: skip
