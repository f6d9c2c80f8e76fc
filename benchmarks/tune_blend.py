"""How much of the trained change should ``distill tune`` keep? One training, every blend scored on STS.

    python benchmarks/tune_blend.py RUN [--set best] [--blends 0,0.25,0.5,0.75,1]

Trains the export table of a run made with ``--teacher`` (as ``distill tune`` does, nothing written to the
run), then scores the table moved each blend of the way from the distilled start (0) to the trained one (1)
as the model2vec export reads sentences: STS 2012-2014 (dev, what the default was chosen on) and 2015-2016
(held out).
"""

from __future__ import annotations

import argparse

from model2vec import StaticModel

from distill.evaluation.sentences import DEV_YEARS, HELD_OUT_YEARS, load_sts, score_sts
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions
from distill.tune.train import train_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--blends", default="0,0.25,0.5,0.75,1")
    args = parser.parse_args()
    run = RunDir(args.run)
    table = train_table(run, run.resolve_set(args.set), SentenceRecipe(Weighting.SIF), TuneOptions())
    history = table.result.history
    print(f"{table.name}: {table.result.sentences:,} sentences, held-out cosine loss {history[0]['held_out']:.4f} "
          f"-> {history[table.result.best_epoch]['held_out']:.4f} (epoch {table.result.best_epoch})")  # fmt: skip
    pairs = load_sts()
    print("| blend | STS12 | STS13 | STS14 | STS15 | STS16 | dev 12-14 | held out 15-16 | mean |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for blend in (float(b) for b in args.blends.split(",")):
        rows = table.blended(blend)
        model = StaticModel(rows, table.tokenizer, normalize=False)  # what the model2vec export saves
        score = score_sts(lambda s, m=model: m.encode(s, show_progress_bar=False), pairs, f"blend {blend}")
        years = " | ".join(f"{score.per_year[y]:.1f}" for y in sorted(score.per_year))
        print(f"| {blend:g} | {years} | {score.mean(DEV_YEARS):.1f} | {score.mean(HELD_OUT_YEARS):.1f} | "
              f"{score.mean():.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
