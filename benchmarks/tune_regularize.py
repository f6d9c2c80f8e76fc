"""Does ``distill tune`` stop too early, or fit its sentences too closely? Two variations of its training, each
scored on STS at blends 0.5 and 0.75:

    python benchmarks/tune_regularize.py RUN [--set best] [--dropout 0,0.15,0.3] [--epochs 2,6,10]

``--dropout P``: each training sentence loses each of its words with probability P at every epoch (one word
kept at least; the held-out sentences, which the early stop reads, are whole). ``--epochs N``: no early stop,
the table after exactly N epochs. Columns as ``benchmarks/tune_blend.py`` prints them: the MTEB splits, the
all-pairs mean of the dev years 2012-2014 (what a choice is made on), the MTEB 12-16 and STS13-16 means.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from sts_columns import STS_HEADER, sts_cells, table_score  # benchmarks/, this script's folder

import distill.tune.train as train
from distill.evaluation.sentences import load_sts
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions


def with_dropout(p: float, seed: int = 0) -> Callable[..., Any]:
    """``train.bag_batches`` whose training batches drop each word with probability ``p``."""
    whole, rng = train.bag_batches, np.random.default_rng(seed)

    def batches(ids: list[np.ndarray], order: np.ndarray, size: int) -> list:
        if size == train.EVAL_BATCH or p == 0:  # the held-out sentences stay whole
            return whole(ids, order, size)
        kept = list(ids)
        for r in order:
            keep = rng.random(len(ids[r])) >= p
            keep[rng.integers(len(keep))] |= not keep.any()
            kept[r] = ids[r][keep]
        return whole(kept, order, size)

    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--dropout", default="0,0.15,0.3", help="comma-separated word dropout rates")
    parser.add_argument("--epochs", default="", help="comma-separated: train exactly N epochs, no early stop")
    args = parser.parse_args()
    run = RunDir(args.run)
    name = run.resolve_set(args.set)
    pairs = load_sts()
    print(f"| variation | best epoch | blend | {STS_HEADER} |")
    print("|---|---:|---:|" + "---:|" * 8)

    def report(label: str, options: TuneOptions) -> None:
        table = train.train_table(run, name, SentenceRecipe(Weighting.SIF), options)
        for blend in (0.5, 0.75):
            score = table_score(table.blended(blend), table.tokenizer, pairs, f"{blend}")
            print(f"| {label} | {table.result.best_epoch} | {blend:g} | {sts_cells(score, 2)} |", flush=True)

    whole, held_out_loss = train.bag_batches, train.held_out_loss
    for p in (float(p) for p in args.dropout.split(",") if p):
        train.bag_batches = with_dropout(p)
        report(f"word dropout {p:g}", TuneOptions())
    train.bag_batches = whole
    for n in (int(n) for n in args.epochs.split(",") if n):
        falling = itertools.count()  # every epoch "better" than the last: the last one is kept
        train.held_out_loss = lambda *a, f=falling, **k: -float(next(f))
        report(f"{n} epochs, no early stop", TuneOptions(epochs=n, patience=n + 1))
    train.held_out_loss = held_out_loss


if __name__ == "__main__":
    main()
