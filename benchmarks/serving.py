"""The serving example of the README, measured: load once, answer neighbour and similarity queries.

    python benchmarks/serving.py outputs/minilm-sts --layer 1 [--index hnsw]

Prints the load time, the memory the process gained by loading (RSS), and queries/s for
nearest-neighbour and similarity queries on the vocabulary's own words.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import time


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--layer", type=int, default=None)
    parser.add_argument("--pooling", default="pc")
    parser.add_argument("--index", default="flat")
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()

    before = rss_mb()
    t0 = time.perf_counter()
    from distill.serve.search import Searcher  # the import is part of what a service pays at start

    searcher = Searcher.open(args.run_dir, layer=args.layer, pooling=args.pooling, kind=args.index)
    load = time.perf_counter() - t0
    loaded = rss_mb()

    words = searcher.words[: args.queries]
    t0 = time.perf_counter()
    for word in words:  # one request at a time, as a service answers them
        searcher.neighbors([word], k=10)
    nn_qps = len(words) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for a, b in itertools.pairwise(words):
        searcher.similarity(a, b)
    sim_qps = (len(words) - 1) / (time.perf_counter() - t0)
    print(f"{args.run_dir} layer {args.layer} {args.pooling}, {len(searcher.words):,} words, index {args.index}")
    print(f"load {load:.2f} s (imports included); RSS {before:.0f} -> {loaded:.0f} MB (+{loaded - before:.0f} MB)")
    print(f"neighbours k=10: {nn_qps:,.0f} queries/s; similarity: {sim_qps:,.0f} queries/s (one query per call)")
    print("example:", searcher.neighbors([words[min(500, len(words) - 1)]], k=5)[0])


if __name__ == "__main__":
    main()
