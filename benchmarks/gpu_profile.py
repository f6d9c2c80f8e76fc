"""Where a run's time goes: the whole pipeline under cProfile (host) and torch.profiler (device kernels).

    python benchmarks/gpu_profile.py --model DIR --corpus FILE [--layers all] [--device cuda] [--top 25]

Runs ``run_pipeline`` twice on the same corpus: once under cProfile, printing the host functions with the
most cumulative and own time, once under torch.profiler, printing the operators with the most device
time. The first run also warms the kernels, so the second's figures are the steady state.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Only light imports here: each tokenizing worker imports this script again (multiprocessing does), and torch
# at the top would cost every worker seconds to start (RESULTS.md, GPU path). torch loads inside the functions.
from distill.config import RunConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--layers", default="all")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--chunk-size", type=int, default=65536)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="distill-profile-") as tmp:
        profile(args, Path(tmp))


def profile(args: argparse.Namespace, tmp: Path) -> None:
    """The two profiled runs, their output under ``tmp``."""
    import torch

    from distill.pipeline import run_pipeline

    def config(name: str) -> RunConfig:
        return RunConfig(model=args.model, corpus=(args.corpus,), out=str(tmp / name), layers=args.layers,
                         device=args.device, progress=False, chunk_size=args.chunk_size)  # fmt: skip

    profiler = cProfile.Profile()
    profiler.enable()
    run_pipeline(config("host"))
    profiler.disable()
    for key in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(key).print_stats(args.top)
        print(f"== host, by {key}\n{text.getvalue()}")

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        run_pipeline(config("device"))
    sort = "cuda_time_total" if torch.cuda.is_available() else "cpu_time_total"
    print(f"== operators, by {sort}")
    print(prof.key_averages().table(sort_by=sort, row_limit=args.top))


if __name__ == "__main__":
    main()
