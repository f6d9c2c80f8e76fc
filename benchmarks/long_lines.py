"""Matching occurrences to windows in a text of one long line, by binary search against a scan of every window.

    python benchmarks/long_lines.py [--words 10000,40000] [--model DIR]

A corpus with no line breaks (text8, a scraped page) is one sentence of thousands of windows. Each occurrence
is matched to the window that holds it with the most context (``choose_windows``); scanning every window of the
sentence for each occurrence, as it did before, costs occurrences x windows. Times both on the same windows and
occurrences (every word of the line, read with the model's tokenizer, 512 pieces a window, stride 128) and checks
that they choose the same windows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from transformers import AutoTokenizer

from distill.corpus import word_spans
from distill.encoders.alignment import Window, choose_windows, make_windows, truncating_backend


def scan(windows: list[Window], sentence: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The code before: for each occurrence, every window of its sentence and its span, one at a time."""
    first = {}
    for i, w in enumerate(windows):
        first.setdefault(w.sentence, i)
    count = np.bincount([w.sentence for w in windows])
    chosen = np.full(len(starts), -1, dtype=np.int64)
    for k, (s, a, b) in enumerate(zip(sentence.tolist(), starts.tolist(), ends.tolist())):
        best = -1
        for i in range(first[s], first[s] + count[s]):
            lo, hi = windows[i].span
            if lo <= a and b <= hi and min(a - lo, hi - b) > best:
                best, chosen[k] = min(a - lo, hi - b), i
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", default="10000,40000")
    parser.add_argument("--model", default="../shared/models/all-MiniLM-L6-v2")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    vocabulary = [w for w in tokenizer.vocab if w.isalpha()][:5000]
    rng = np.random.default_rng(0)
    print("| words in the line | windows | occurrences | scan (s) | binary search (s) | scan / search | same |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for n in (int(w) for w in args.words.split(",")):
        text = " ".join(rng.choice(vocabulary, n))
        windows = make_windows(truncating_backend(tokenizer, 512, 128).encode_batch([text]))
        spans = word_spans(text)
        starts, ends = np.array([s for s, _ in spans]), np.array([e for _, e in spans])
        sentence = np.zeros(len(spans), dtype=np.int64)
        t0 = time.perf_counter()
        fast = choose_windows(windows, sentence, starts, ends)
        t1 = time.perf_counter()
        slow = scan(windows, sentence, starts, ends)
        t2 = time.perf_counter()
        print(f"| {n:,} | {len(windows):,} | {len(spans):,} | {t2 - t1:.2f} | {t1 - t0:.3f} | "
              f"{(t2 - t1) / (t1 - t0):,.0f} | {bool((fast == slow).all())} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
