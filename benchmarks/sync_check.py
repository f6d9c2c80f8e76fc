"""Where a GPU run makes the host wait for the device: one run under torch's sync debug mode, each place that
waited printed once with how often it did.

    python benchmarks/sync_check.py --model DIR --corpus FILE [--layers all] [--lines 3000]

A wait inside the encoding loop stops the host from queueing the next batch while the device runs this one;
the loop should have none (the model's load, the reduction and the writing may). Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import traceback
import warnings
from pathlib import Path

from corpus_head import write_head  # benchmarks/, this script's folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--layers", default="all")
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    import torch

    import distill

    seen: collections.Counter[str] = collections.Counter()

    def record(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        frames = [f for f in traceback.extract_stack()[:-1] if "warnings" not in f.filename]
        ours = [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames if "/distill/" in f.filename]
        theirs = [f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.lineno}" for f in frames[-2:]]
        seen[" <- ".join([*theirs[::-1], *ours[::-1][:3]])] += 1

    with tempfile.TemporaryDirectory(prefix="distill-sync-") as tmp:
        corpus = write_head(args.corpus, args.lines, Path(tmp) / "corpus.txt")
        distill.run(model=args.model, corpus=str(corpus), layers="1", device="cuda", progress=False,
                    out=f"{tmp}/warm")  # fmt: skip  # kernels and allocator warm, outside the count
        warnings.showwarning = record
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        result = distill.run(model=args.model, corpus=str(corpus), layers=args.layers, pooling="mean",
                             device="cuda", progress=False, out=f"{tmp}/run")  # fmt: skip
        torch.cuda.set_sync_debug_mode(0)
    batches = result.manifest["encoding"].get("batches", "?")
    print(f"{sum(seen.values())} waits at {len(seen)} places; {result.manifest['encoding']['tokens']:,} tokens, "
          f"batches {batches}")  # fmt: skip
    for place, count in seen.most_common(args.top):
        print(f"{count:6d}  {place}")


if __name__ == "__main__":
    main()
