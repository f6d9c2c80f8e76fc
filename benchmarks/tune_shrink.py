"""Should a row that few tuning texts hold keep less of its trained change? Trained once, every blend and
shrinkage scored on STS.

    python benchmarks/tune_shrink.py RUN [--set best] [--blends 0.5,0.75,1] [--shrink 0,1,3,10,30] [--seed 0]

``distill tune`` keeps ``blend`` of the whole trained change, for every row alike. With lazy Adam a row moves
about as far at each step its batch holds it whatever its gradient, so a row that two texts hold is moved by two
texts' noise. Here the table is the start, plus ``blend`` of the shared map's change (every row alike), plus
``blend * n / (n + K)`` of each row's own change, where ``n`` counts the training texts (held-out ones left out)
that hold the row: ``K = 0`` is ``distill tune``'s table. Scored as the model2vec export reads sentences: all
pairs of STS 2012-2014 (dev, what a choice is made on), and the MTEB splits with their means.
"""

from __future__ import annotations

import argparse

import numpy as np
from sts_columns import STS_HEADER, sts_cells, table_score  # benchmarks/, this script's folder

from distill.evaluation.sentences import load_sts
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions
from distill.tune.train import TunedTable, held_out_split, train_table, tuning_targets


def row_counts(run: RunDir, table: TunedTable, options: TuneOptions) -> np.ndarray:
    """How many of the texts ``tune`` trained on hold each row (its held-out split drawn again, as it drew it)."""
    run_ids, _, bags = tuning_targets(run, table, options)
    _, train = held_out_split(len(run_ids), bags, options.held_out, np.random.default_rng(options.seed))
    counts = np.zeros(len(table.start), dtype=np.int64)
    for i in train:
        counts[np.unique(run_ids[i])] += 1
    return counts


def shrunk(table: TunedTable, counts: np.ndarray, blend: float, k: float) -> np.ndarray:
    """The start, ``blend`` of the map's change, and ``blend * n / (n + k)`` of each row's own change."""
    start, trained = table.start, table.result.vectors
    mapped = start if table.result.map is None else start @ table.result.map.T  # where an untrained row goes
    keep = counts / (counts + k) if k > 0 else np.ones(len(counts))
    return (start + blend * (mapped - start) + (blend * keep)[:, None] * (trained - mapped)).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--blends", default="0.5,0.75,1")
    parser.add_argument("--shrink", default="0,1,3,10,30", help="comma-separated K of n / (n + K)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    run = RunDir(args.run)
    options = TuneOptions(seed=args.seed)
    table = train_table(run, run.resolve_set(args.set), SentenceRecipe(Weighting.SIF), options)
    counts = row_counts(run, table, options)
    held = table.result.history[table.result.best_epoch]["held_out"]
    held_rows = counts[counts > 0]
    print(f"{table.name}: {len(counts):,} rows, {len(held_rows):,} held by a training text (median "
          f"{int(np.median(held_rows))}); best epoch {table.result.best_epoch}, held-out loss {held:.4f}")  # fmt: skip
    pairs = load_sts()
    print(f"| blend | K | {STS_HEADER} |")
    print("|---:|---:|" + "---:|" * 8)
    for blend in (float(b) for b in args.blends.split(",")):
        for k in (float(v) for v in args.shrink.split(",")):
            score = table_score(shrunk(table, counts, blend, k), table.tokenizer, pairs, f"{blend} {k}")
            print(f"| {blend:g} | {k:g} | {sts_cells(score)} |", flush=True)


if __name__ == "__main__":
    main()
