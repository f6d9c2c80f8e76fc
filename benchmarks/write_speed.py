"""What writing one vector set costs: formatting its text, then each of its three files, with their sizes.

    python benchmarks/write_speed.py [--words 53278] [--dim 768] [--dir DIR] [--sets 13 [--workers N]]

A run writes every set it is asked for as word2vec text, word2vec binary and a FAISS index. This times one set
of seeded random vectors (the words and dimension of the 12M-word Gutenberg run with BERT-base by default),
written into ``--dir`` (a temporary folder by default: put it on the disk a run writes to), and the rate the
disk took the bytes at: whether a run's last stage is bound by formatting or by the disk. ``--sets N`` then writes
N sets' text files at once, side by side, as a run's last stage can: by ``--workers`` writer threads, and by as
many worker processes (started within the timing), each way's seconds and the ratio; before that, the formatter
alone in as many threads and forked processes at once (how much of the work threads lose to the GIL).
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from distill.encoding.workers import writer_threads
from distill.parallel import WorkerPool
from distill.vectors.faiss_index import write_faiss
from distill.vectors.floattext import format_lines
from distill.vectors.keyed import to_keyed_vectors, write_rows, write_word2vec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=53278)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    parser.add_argument("--sets", type=int, default=0, help="then this many sets' text files at once (0: none)")
    parser.add_argument("--workers", type=int, default=None, help="threads and processes (default: a run's)")
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
        if args.sets:
            formatting_alone(words, vectors, args.workers or writer_threads())
            at_once(words, vectors, args.sets, args.workers or writer_threads(), Path(tmp))


def _format(words: list[str], vectors: np.ndarray) -> None:
    for _ in format_lines(words, vectors):
        pass


def formatting_alone(words: list[str], vectors: np.ndarray, workers: int) -> None:
    """The text formatter alone (no file, no rows sent), once, then ``workers`` times at once in threads and in
    forked processes: how much of its work threads lose to the GIL."""
    t0 = time.perf_counter()
    _format(words, vectors)
    one = time.perf_counter() - t0
    print(f"format one set: {one:.2f} s")
    fork = multiprocessing.get_context("fork")
    for label, make in (("threads", threading.Thread), ("processes", fork.Process)):
        runners = [make(target=_format, args=(words, vectors)) for _ in range(workers)]
        t0 = time.perf_counter()
        for runner in runners:
            runner.start()
        for runner in runners:
            runner.join()
        seconds = time.perf_counter() - t0
        pace = workers * one / seconds
        print(f"format {workers} sets in {workers} {label}: {seconds:.2f} s, {pace:.2f} sets' work at once")


def at_once(words: list[str], vectors: np.ndarray, sets: int, workers: int, folder: Path) -> None:
    """``sets`` text files written by ``workers`` threads, then by as many processes (a run's text writers,
    :func:`distill.sets.text_writers`), side by side."""
    seconds = {}
    executors: dict[str, Callable[[], Executor]] = {
        "threads": lambda: ThreadPoolExecutor(workers),
        "processes": lambda: WorkerPool(workers).executor,
    }
    for label, start in executors.items():
        (folder / label).mkdir()
        t0 = time.perf_counter()
        with start() as executor:
            paths = [folder / label / f"{i}.txt" for i in range(sets)]
            for future in [executor.submit(write_rows, words, vectors, path) for path in paths]:
                future.result()
        seconds[label] = time.perf_counter() - t0
        shutil.rmtree(folder / label)
        print(f"{sets} text files by {workers} {label}: {seconds[label]:.2f} s")
    print(f"processes against threads: {seconds['threads'] / seconds['processes']:.2f} times as fast")


if __name__ == "__main__":
    main()
