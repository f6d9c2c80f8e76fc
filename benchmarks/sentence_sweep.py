"""Sentence recipes for a run's sets: STS Spearman x100 on the dev years (2012-2014), held-out years beside.

    python benchmarks/sentence_sweep.py outputs/minilm-gutenberg-2m [--sets layer6.mean,best]

For every set x word weighting (none, sif, usif, zipf) x unit vectors or not x common directions removed
(0, 1, 3), the vectors are prepared as ``distill export`` bakes them, each sentence is the mean of its words'
vectors (split as the exports split them), and the pairs are scored. The best recipe is chosen on the dev
years only; the held-out mean (2015-2016) is printed beside, never used to choose.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import distill
from distill.evaluation.sentences import DEV_YEARS, HELD_OUT_YEARS, load_sts, mean_of_words, score_sts
from distill.rundir import RunDir, sets_of, words_per_line
from distill.serve.weighting import SentenceRecipe, Weighting, apply_recipe
from distill.vectors.keyed import to_keyed_vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--sets", default=None, help="comma-separated set names (default: every set of the run)")
    parser.add_argument("--out", type=Path, default=None, help="JSON of every row (default: RUN/sentence_sweep.json)")
    args = parser.parse_args()
    run = RunDir(args.run)
    manifest = run.manifest()
    names = args.sets.split(",") if args.sets else sets_of(manifest)
    names = [run.resolve_set(n) for n in names]
    pairs = load_sts()
    words_per_sentence = words_per_line(manifest)
    rows = []
    print("| set | weighting | unit | removed | STS12-14 (dev) | STS15-16 (held out) | all | sentences/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name in names:
        kv = distill.load(args.run, vector_set=name)
        counts = run.counts(kv.index_to_key)
        for weighting, unit, remove in itertools.product(Weighting, (True, False), (0, 1, 3)):
            recipe = SentenceRecipe(weighting, unit, remove)
            ready = to_keyed_vectors(kv.index_to_key, apply_recipe(kv.vectors, counts, recipe, words_per_sentence))
            score = score_sts(mean_of_words(ready, manifest["vocabulary"]["lowercase"]), pairs, name)
            row = {
                "set": name,
                **recipe.to_json(),
                "dev": score.mean(DEV_YEARS),
                "held_out": score.mean(HELD_OUT_YEARS),
                "all": score.mean(),
                "per_year": score.per_year,
                "sentences_per_second": score.sentences_per_second,
            }
            rows.append(row)
            print(f"| {name} | {weighting.value} | {unit} | {remove} | {row['dev']:.1f} | {row['held_out']:.1f} | "
                  f"{row['all']:.1f} | {score.sentences_per_second:,.0f} |")  # fmt: skip
    best = max(rows, key=lambda r: r["dev"])
    print(f"\nchosen on the dev years: {json.dumps({k: best[k] for k in ('set', 'weighting', 'unit', 'remove')})}; "
          f"dev {best['dev']:.1f}, held out {best['held_out']:.1f}, all five years {best['all']:.1f}")  # fmt: skip
    out = args.out or args.run / "sentence_sweep.json"
    out.write_text(json.dumps({"rows": rows, "chosen": best}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
