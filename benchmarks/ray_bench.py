"""``--engine ray`` against the local engine: 1 and 2 workers, overhead and correctness.

    .venv/bin/python benchmarks/ray_bench.py [--lines 10000] [--layers all]

Runs the same distillation (MiniLM, the first ``--lines`` STS sentences) with the local engine and
with Ray at 1 and 2 encoder actors on a local cluster, each in a fresh process (Ray started and
stopped by the run, as a user gets it). Prints wall time, encoding time, tokens/s and the largest
difference of any vector from the local engine's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus_head import write_head  # benchmarks/, this script's folder

from distill.paths import default_corpus
from distill.rundir import load

RUNNER = """
import json, sys, time
import distill
options = json.loads(sys.argv[1])
t0 = time.perf_counter()
m = distill.run(**options).manifest
print(json.dumps({"wall": time.perf_counter() - t0, "encode": m["timings_seconds"]["encode"],
                  "tokens": m["encoding"]["tokens"]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10000)
    parser.add_argument("--layers", default="all")
    parser.add_argument("--model", default="minilm")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="distill-ray-"))
    corpus = write_head(default_corpus(), args.lines, tmp / "corpus.txt")
    settings = [("local", {}), ("ray, 1 worker", {"engine": "ray", "workers": 1}),
                ("ray, 2 workers", {"engine": "ray", "workers": 2})]  # fmt: skip
    results = []
    for i, (name, extra) in enumerate(settings):
        options = {"model": args.model, "corpus": [str(corpus)], "out": str(tmp / f"run{i}"), "layers": args.layers,
                   "progress": False, "resume": False, **extra}  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(options)], capture_output=True, text=True)
        if done.returncode:
            sys.exit(done.stderr)
        record = json.loads(done.stdout.strip().splitlines()[-1])
        record["process"] = time.perf_counter() - t0
        results.append((name, options["out"], record))
        print(name, record, flush=True)

    local_dir = results[0][1]
    names = [p.stem for p in sorted(Path(local_dir).glob("layer*.bin"))]
    print(f"\n{args.model}, {args.lines:,} STS lines, layers {args.layers}, {results[0][2]['tokens']:,} tokens\n")
    print("| engine | process wall s | encoding s | encoding tokens/s | overhead vs local s | max abs diff |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, out, r in results:
        diff = 0.0
        for stem in names:
            a, b = load(Path(local_dir) / f"{stem}.bin"), load(Path(out) / f"{stem}.bin")
            assert a.index_to_key == b.index_to_key
            diff = max(diff, float(np.abs(a.vectors - b.vectors).max()))
        print(f"| {name} | {r['process']:.1f} | {r['encode']:.1f} | {r['tokens'] / r['encode']:,.0f} | "
              f"{r['process'] - results[0][2]['process']:+.1f} | {diff:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
