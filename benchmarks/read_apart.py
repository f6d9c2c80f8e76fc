"""Texts and words read apart (``--teacher-bags``, ``--bag-topics``, words read alone): batches of like length
against batches as the texts come.

    .venv/bin/python benchmarks/read_apart.py [--model minilm] [--texts 4096] [--rounds 2] [--device cpu]

In one process, side by side, each round timing both ways: the teacher reading ``--texts`` bags of words as
``distill run --teacher-bags`` draws them, and as many of the language's frequent words read alone, in the
default prompt (``concept``) and by the teacher. "as drawn" is the reading before the windows were sorted by
length (each chunk's windows batched in the order given); "sorted" is what ``read_texts`` and ``encode_alone``
do now. Also the largest difference between the two ways' vectors.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from distill.config import Template
from distill.encoders import load_encoder, load_encoder_config
from distill.encoding import alone
from distill.encoding.prepare import prepare_chunk
from distill.lexicon import frequent_words, word_bags
from distill.paths import resolve_model
from distill.tune.teacher import TeacherTargets, teacher_pooling


@contextmanager
def as_drawn(drawn: bool) -> Iterator[None]:
    """With ``drawn``, the windows batched in the order given, as before they were sorted."""
    sorted_ = alone.prepare_sorted
    if drawn:
        alone.prepare_sorted = prepare_chunk  # type: ignore[assignment]
    try:
        yield
    finally:
        alone.prepare_sorted = sorted_  # type: ignore[assignment]


def timed(read: Callable[[], Any], drawn: bool) -> tuple[float, Any]:
    with as_drawn(drawn):
        start = time.perf_counter()
        result = read()
        return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--texts", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    source = resolve_model(args.model)
    config = load_encoder_config(args.model, source, None, None)
    layers = (int(config.num_hidden_layers),)
    encoder = load_encoder(args.model, source, layers, device=args.device, config=config)
    bags, words = word_bags(args.texts, 0), frequent_words(args.texts)

    def teacher(texts: list[str]) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            observer = TeacherTargets(encoder.n_layers, teacher_pooling(source))
            alone.read_texts(encoder, texts, [observer], args.batch_size, progress=False)
            return observer.embeddings()

        return read

    def words_alone() -> np.ndarray:
        return alone.encode_alone(encoder, words, layers, args.batch_size, Template.parse("concept"), progress=False)

    print(f"{args.model} on {encoder.device}, {args.texts:,} texts of each kind, batches of {args.batch_size}\n")
    print("| read | round | as drawn (s) | sorted (s) | sorted / as drawn | largest difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, read in [("bags (the teacher)", teacher(bags)), ("words alone (the prompt)", words_alone),
                       ("words alone (the teacher)", teacher(words))]:  # fmt: skip
        for r in range(args.rounds):
            before, old = timed(read, True)
            after, new = timed(read, False)
            diff = float(np.abs(new - old).max())
            print(f"| {name} | {r + 1} | {before:.1f} | {after:.1f} | {after / before:.2f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
