"""FAISS index kinds for serving nearest neighbours: recall@10 against exact search, queries/s, memory, build time.

    python benchmarks/index_bench.py                      # synthetic 50k and 400k vocabularies, 384 dims
    python benchmarks/index_bench.py --vectors outputs/minilm-gutenberg-2m/layer1.pc.bin   # real vectors too

Synthetic vocabularies are drawn from a mixture of 2,000 Gaussian clusters in 384 dimensions (words
cluster by topic, as real vectors do; uniform noise would be the hardest case for every index), so
recall is indicative; the real-vector rows are what distilled vectors give. One process, one thread
count, every kind on the same vectors and the same 1,000 queries.
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np

from distill.vectors.faiss_index import IndexKind, build_faiss_index
from distill.vectors.keyed import l2_normalize


def synthetic(n: int, d: int = 384, clusters: int = 2000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, d)).astype(np.float32)
    members = rng.integers(0, clusters, n)
    return centers[members] + 0.6 * rng.standard_normal((n, d)).astype(np.float32)


def measure(name: str, vectors: np.ndarray, n_queries: int = 1000, k: int = 10) -> list[str]:
    unit = l2_normalize(vectors)
    queries = unit[np.random.default_rng(1).choice(len(unit), n_queries, replace=False)]
    rows, exact = [], None
    for kind in IndexKind:
        t0 = time.perf_counter()
        index = build_faiss_index(vectors, kind)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, ids = index.search(queries, k)
        seconds = time.perf_counter() - t0
        if exact is None:
            exact = ids
        recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(ids, exact)])
        size = faiss.serialize_index(index).nbytes
        rows.append(
            f"| {name} | {len(vectors):,} | {kind} | {recall:.3f} | {n_queries / seconds:,.0f} | "
            f"{size / 1e6:,.1f} | {build:.1f} |"
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50000,400000", help="synthetic vocabulary sizes")
    parser.add_argument("--vectors", nargs="*", default=[], help="real vector files (.txt/.bin) to add")
    args = parser.parse_args()
    print(f"faiss {faiss.__version__}, {faiss.omp_get_max_threads()} threads")
    print("| vectors | words | index | recall@10 | queries/s | index MB | build s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for path in args.vectors:
        from distill.vectors.reader import read_vectors

        measure(path.split("/")[-2] + "/" + path.split("/")[-1], read_vectors(path).vectors)
    for n in (int(s) for s in args.sizes.split(",")):
        measure("synthetic", synthetic(n))


if __name__ == "__main__":
    main()
