"""Where the tokenizing pool's time goes: its start, each chunk in a worker, and the main process's share.

    python benchmarks/pool_check.py --model DIR --corpus FILE [--workers 0,2,14] [--chunk-size 4096]

Walks the corpus for the sampled sentences once (as a run does), then, for each number of workers, prepares
every chunk through :func:`distill.encoding.workers.prepared_chunks` and prints: the seconds until the first
(one-sentence) chunk comes back (the pool's start), the seconds and tokens/s for all the chunks after it,
and the main process's CPU seconds in that time. Also the seconds a fresh interpreter takes to import what
a worker runs. On a many-core host this says whether the pool, the chunks or the main process limit the host.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host_ceiling import cpu_seconds  # benchmarks/, this script's folder
from sentence_jobs import sentence_jobs

from distill.config import RunConfig
from distill.encoders import load_encoder
from distill.encoding.workers import given_or_own_pool, prepared_chunks, usable_cores
from distill.iterate import batched
from distill.occurrences import SentenceJob
from distill.paths import resolve_model


def import_seconds(module: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    return time.perf_counter() - t0


def timed_chunks(model: object, chunks: list[list[SentenceJob]], workers: int, stride: int) -> None:
    first: list[SentenceJob] = chunks[0][:1]
    t0, c0 = time.perf_counter(), cpu_seconds()
    marks: list[float] = []

    def feed() -> Iterator[list[SentenceJob]]:
        yield first
        yield from chunks

    tokens = 0
    with given_or_own_pool(None, workers, "cuda") as pool:  # started here: its start is timed
        for prepared, _ in prepared_chunks(model, feed(), stride, pool):
            marks.append(time.perf_counter())
            tokens += sum(len(p.window.ids) for p in prepared)
    start = marks[0] - t0
    rest = marks[-1] - marks[0]
    print(f"workers {workers:2d}: first chunk back after {start:6.2f} s; {len(chunks)} chunks, {tokens:,} tokens "
          f"in {rest:6.2f} s = {tokens / rest:,.0f} tokens/s; main process {cpu_seconds() - c0:6.2f} CPU s",
          flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--workers", default=f"0,2,{max(1, usable_cores() - 2)}")
    parser.add_argument("--chunk-size", type=int, default=4096)
    args = parser.parse_args()
    print(f"cores {usable_cores()}; import distill.encoding.workers in a fresh interpreter: "
          f"{import_seconds('distill.encoding.workers'):.2f} s", flush=True)  # fmt: skip
    config = RunConfig(model=args.model, progress=False)
    model = load_encoder(config.model, resolve_model(config.model), (1,), device="cpu")
    lowercase = model.uncased  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    jobs = list(sentence_jobs([args.corpus], lowercase, min_count=3, max_occurrences=25, seed=0))
    chunks = list(batched(jobs, args.chunk_size))
    print(f"count, plan and walk: {time.perf_counter() - t0:.2f} s; {len(jobs):,} sentences in {len(chunks)} chunks "
          f"of {args.chunk_size}", flush=True)  # fmt: skip
    for workers in (int(w) for w in args.workers.split(",")):
        timed_chunks(model, chunks, workers, config.stride)


if __name__ == "__main__":  # the workers import this module: run only in the parent
    main()
