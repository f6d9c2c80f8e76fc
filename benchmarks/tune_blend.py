"""How should ``distill tune`` train, and how much of the trained change should it keep? Each loss (and step
size) trained once, every blend scored on STS.

    python benchmarks/tune_blend.py RUN [--set best] [--losses cosine,mse,contrastive,relational]
        [--learning-rates 1e-3] [--batch-sizes 256] [--blends 0,0.25,0.5,0.75,1] [--sentences 25000,50000]
        [--maps on,off] [--soup 0,7] [--rounds 3]

Trains the export table of a run made with ``--teacher`` (as ``distill tune`` does, nothing written to the
run), then scores the table moved each blend of the way from the distilled start (0) to the trained one (1)
as the model2vec export reads sentences: all pairs of STS 2012-2014 (dev, what the defaults are chosen on),
and the MTEB splits (STS12's test split, STS13-16) with their means. ``--sentences`` trains on seeded samples
of that many of the run's sentences as well as on all of them: does the model gain from more targets?
``--maps on,off`` trains with and without the shared map (``distill tune --no-shared-map``). ``--soup 0,7``
trains once per seed instead and also scores the mean of those trained tables (a model soup), each blended
from the same start. ``--rounds N`` trains born-again rounds: each round starts from the last round's table at
the default blend (``distill tune``'s table after round 1) and trains toward the same targets again; every blend of
each round is scored, from that round's start.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import replace

import numpy as np
from sts_columns import STS_HEADER, sts_cells, table_score  # benchmarks/, this script's folder

from distill.evaluation.sentences import load_sts
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions
from distill.tune.train import TunedTable, train_table, tune, tuning_targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--losses", default="cosine")
    parser.add_argument("--learning-rates", default="1e-3")
    parser.add_argument("--batch-sizes", default="256", help="comma-separated: sentences per step")
    parser.add_argument("--blends", default="0,0.25,0.5,0.75,1")
    parser.add_argument("--sentences", default="all", help="comma-separated counts; all: every sentence")
    parser.add_argument("--maps", default="on", help="on, off or both: train with the shared map or without")
    parser.add_argument("--soup", default="", help="comma-separated seeds: each trained, then their mean scored")
    parser.add_argument("--rounds", type=int, default=1, help="born-again rounds, each from the last one's table")
    args = parser.parse_args()
    run = RunDir(args.run)
    name = run.resolve_set(args.set)
    pairs = load_sts()
    print(f"| loss | lr | batch | shared map | sentences | best epoch | held-out loss | blend | {STS_HEADER} |")
    print("|---|---:|---:|---|---:|---:|---|---:|" + "---:|" * 8)
    counts = [None if n == "all" else int(n) for n in args.sentences.split(",")]
    maps = [m == "on" for m in args.maps.split(",")]
    rates = map(float, args.learning_rates.split(","))

    def report(table: TunedTable, label: str, fall: str) -> None:
        for blend in (float(b) for b in args.blends.split(",")):
            score = table_score(table.blended(blend), table.tokenizer, pairs, f"{blend}")
            print(f"| {label} | {table.result.sentences:,} | {table.result.best_epoch} | {fall} | {blend:g} | "
                  f"{sts_cells(score)} |", flush=True)  # fmt: skip

    if args.rounds > 1:
        table = train_table(run, name, SentenceRecipe(Weighting.SIF), TuneOptions())
        report(table, "cosine, round 1 | 1e-3 | 256 | on", "")
        ids, targets, bags = tuning_targets(run, table, TuneOptions())
        for round_ in range(2, args.rounds + 1):
            start = table.blended(TuneOptions.blend)
            result = tune(start, ids, targets, TuneOptions(), train_only=bags)
            table = replace(table, start=start, result=result)
            fall = f"{result.history[0]['held_out']:.4g} -> {result.history[result.best_epoch]['held_out']:.4g}"
            report(table, f"cosine, round {round_} | 1e-3 | 256 | on", fall)
        return
    if args.soup:
        tables = []
        for seed in (int(s) for s in args.soup.split(",")):
            tables.append(train_table(run, name, SentenceRecipe(Weighting.SIF), TuneOptions(seed=seed)))
            report(tables[-1], f"cosine, seed {seed} | 1e-3 | 256 | on", "")
        soup = np.mean([t.result.vectors for t in tables], axis=0)
        report(
            replace(tables[0], result=replace(tables[0].result, vectors=soup, best_epoch=0)),
            f"soup of seeds {args.soup} | 1e-3 | 256 | on",
            "",
        )
        return
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    for loss, lr, size, n, shared in itertools.product(args.losses.split(","), rates, sizes, counts, maps):
        options = TuneOptions(learning_rate=lr, batch_size=size, loss=loss, shared_map=shared)
        table = train_table(run, name, SentenceRecipe(Weighting.SIF), options, sentences=n)
        history, best = table.result.history, table.result.best_epoch
        report(table, f"{loss} | {lr:g} | {size} | {'on' if shared else 'off'}", f"{history[0]['held_out']:.4g} -> "
               f"{history[best]['held_out']:.4g}")  # fmt: skip


if __name__ == "__main__":
    main()
