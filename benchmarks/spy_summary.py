"""Where a py-spy profile's time went: its raw (collapsed) output read back, seconds per thread, and for each
thread the lines of distill's code it was in (the deepest frame of the package), each with the outside call it
was making there (a wait shows as the lock, queue or CUDA call it sits in).

    py-spy record --idle -t -r 50 -f raw -o spy.txt -- python -m distill run ...
    python benchmarks/spy_summary.py spy.txt --rate 50 [--top 25]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path


def read_raw(path: Path) -> list[tuple[list[str], int]]:
    """(frames from the thread down, samples) for each line of py-spy's raw format: ``a;b;c 12``."""
    stacks = []
    for line in path.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def thread_name(frame: str) -> str:
    """``thread (3975): ThreadPoolExecutor-1_0`` -> ``ThreadPoolExecutor-1``: one name for a pool's threads."""
    name = frame.split(": ", 1)[-1]
    return name.rsplit("_", 1)[0] if name.startswith("ThreadPoolExecutor") else name


def place(frames: list[str]) -> str:
    """The deepest frame in distill's code, and the call it was making when it is not distill's own."""
    ours = [i for i, f in enumerate(frames) if "distill/" in f]
    if not ours:
        return frames[-1] if frames else "(no frame)"
    i = ours[-1]
    below = frames[i + 1 :]
    return frames[i] + (f"  ->  {below[0]} .. {below[-1]}" if below else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", type=Path)
    parser.add_argument("--rate", type=float, default=50.0, help="py-spy's samples per second (-r)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    per_thread: Counter[str] = Counter()
    places: dict[str, Counter[str]] = defaultdict(Counter)
    for frames, count in read_raw(args.raw):
        thread = thread_name(frames[0])
        per_thread[thread] += count
        places[thread][place(frames[1:])] += count
    for thread, samples in per_thread.most_common():
        print(f"\n{thread}: {samples / args.rate:.1f} s")
        for where, n in places[thread].most_common(args.top):
            print(f"  {n / args.rate:7.2f} s  {where}")


if __name__ == "__main__":
    main()
