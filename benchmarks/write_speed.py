"""What writing one vector set costs: formatting its text, then each of its three files, with their sizes.

    python benchmarks/write_speed.py [--words 53278] [--dim 768] [--dir DIR]

A run writes every set it is asked for as word2vec text, word2vec binary and a FAISS index. This times one set
of seeded random vectors (the words and dimension of the 12M-word Gutenberg run with BERT-base by default),
written into ``--dir`` (a temporary folder by default: put it on the disk a run writes to), and the rate the
disk took the bytes at: whether a run's last stage is bound by formatting or by the disk.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from distill.vectors.faiss_index import write_faiss
from distill.vectors.floattext import format_lines
from distill.vectors.keyed import to_keyed_vectors, write_word2vec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=53278)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    args = parser.parse_args()
    words = [f"word{i}" for i in range(args.words)]
    vectors = (np.random.default_rng(0).standard_normal((args.words, args.dim)) * 0.05).astype(np.float32)
    kv = to_keyed_vectors(words, vectors, np.ones(args.words, dtype=np.int64))
    with tempfile.TemporaryDirectory(prefix="distill-write-", dir=args.dir) as tmp:
        t0 = time.perf_counter()
        text_bytes = sum(len(block) for block in format_lines(words, vectors))
        print(f"format the text alone: {time.perf_counter() - t0:.2f} s, {text_bytes / 1e6:,.0f} MB")
        total_bytes, total_seconds = 0, 0.0
        for label, write, path in (
            ("text", lambda p: write_word2vec(kv, p, binary=False), Path(tmp, "set.txt")),
            ("binary", lambda p: write_word2vec(kv, p, binary=True), Path(tmp, "set.bin")),
            ("faiss", lambda p: write_faiss(kv.index_to_key, kv.vectors, p), Path(tmp, "set.faiss")),
        ):
            t0 = time.perf_counter()
            write(path)
            seconds = time.perf_counter() - t0
            size = path.stat().st_size
            total_bytes, total_seconds = total_bytes + size, total_seconds + seconds
            print(f"{label:7s} {seconds:6.2f} s  {size / 1e6:8,.0f} MB  {size / 1e6 / seconds:6,.0f} MB/s")
        rate = total_bytes / 1e6 / total_seconds
        print(f"one set: {total_seconds:.2f} s for {total_bytes / 1e6:,.0f} MB ({rate:,.0f} MB/s)")


if __name__ == "__main__":
    main()
