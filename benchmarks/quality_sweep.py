"""Which static vectors are best: layers, poolings, layer combinations and post-processing, on finished runs.

    python benchmarks/quality_sweep.py outputs/minilm-sts outputs/minilm-gutenberg-2m

Each run folder must hold every layer with both poolings (make table / make analyze write them). Every
setting is scored on the dev sets (SimLex-999, MEN, WS353, RW; Spearman, standard OOV policy, each run's
own vocabulary) and ranked by their mean over all runs; the best few, the paper's setting (layer 1, first
PC) and the best single layer are then scored on the held-out sets (Google and MSR analogies, SemEval-2012,
AP, BLESS) that were not used to choose. Post-processing times are measured; the distillation time is the
run's own (manifest).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

from distill.derived.recipe import Recipe, derived_vectors
from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import (
    evaluate_analogy,
    evaluate_categorization,
    evaluate_relational,
    evaluate_similarity,
)
from distill.rundir import load
from distill.vectors.keyed import to_keyed_vectors

DEV = ("simlex999", "men", "ws353", "rw")
HELD_OUT = ("google", "msr", "semeval2012", "ap", "bless")
RANGES = [(0, 1), (0, 2), (0, 3), (1, 3), (0, 6), (1, 6), (2, 6), (3, 6), (4, 6)]
POST = ["none", "center", "top1", "top3", "top5", "top10", "whiten"]


def settings(n_layers: int) -> list[tuple[str, tuple[int, ...], str, str]]:
    """(name, layers, pooling, post-processing)."""
    out = []
    groups = [(layer,) for layer in range(n_layers + 1)]
    groups += [tuple(range(a, b + 1)) for a, b in RANGES if b <= n_layers]
    for layers, pooling, post in itertools.product(groups, ("pc", "mean", "pc+mean"), POST):
        span = f"L{layers[0]}" if len(layers) == 1 else f"L{layers[0]}-{layers[-1]}"
        out.append((f"{span} {pooling} {post}", layers, pooling, post))
    return out


def vectors(cache: dict, run: Path, layers: tuple[int, ...], pooling: str, post: str) -> tuple[list[str], np.ndarray]:
    """The setting's vectors through distill.derived, each layer file read once per run."""

    def cached(layer: int, pooling: str) -> object:
        if (layer, pooling) not in cache:
            cache[(layer, pooling)] = load(run, layer=layer, pooling=pooling)
        return cache[(layer, pooling)]

    recipe = Recipe(
        layers=",".join(map(str, layers)),
        pooling=pooling,
        remove_top=0 if post == "center" else int(post[3:]) if post.startswith("top") else None,
        whiten=post == "whiten",
    )
    words, x, _, _ = derived_vectors(recipe, max(layers), cached)
    return words, x


def held_out(kv, data: dict) -> dict[str, float]:
    scores = {}
    for name, d in data.items():
        if name in ("google", "msr"):
            scores[name] = evaluate_analogy(kv, d)[0].score
        elif name == "semeval2012":
            scores[name] = evaluate_relational(kv, d).score
        else:
            scores[name] = evaluate_categorization(kv, d).score
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--top", type=int, default=5, help="settings scored on the held-out sets")
    args = parser.parse_args()
    runs = [Path(r) for r in args.runs]
    dev = {n: load_benchmark(n) for n in DEV}
    hold = {n: load_benchmark(n) for n in HELD_OUT}
    n_layers = min(json.loads((r / "manifest.json").read_text())["model"]["n_layers"] for r in runs)
    caches = {r: {} for r in runs}
    table = []
    for name, layers, pooling, post in settings(n_layers):
        row = {"setting": name, "layers": layers, "pooling": pooling, "post": post, "dev": {}, "seconds": 0.0}
        for run in runs:
            t0 = time.perf_counter()
            words, x = vectors(caches[run], run, layers, pooling, post)
            row["seconds"] += time.perf_counter() - t0
            kv = to_keyed_vectors(words, x)
            row["dev"][run.name] = {n: evaluate_similarity(kv, d).score for n, d in dev.items()}
        row["mean"] = float(np.mean([s for r in row["dev"].values() for s in r.values()]))
        table.append(row)
    table.sort(key=lambda r: -r["mean"])
    paper = next(r for r in table if r["setting"] == "L1 pc none")
    best_single = next(r for r in table if len(r["layers"]) == 1 and r["post"] == "none")
    chosen = table[: args.top] + [r for r in (best_single, paper) if r not in table[: args.top]]
    cols = [f"{run.name} {n}" for run in runs for n in DEV]
    print("## Dev sets (Spearman), ranked by their mean over runs\n")
    print("| rank | setting | mean | " + " | ".join(cols) + " | post-processing s |")
    print("|---:|---|---:|" + "---:|" * len(cols) + "---:|")
    for rank, r in enumerate(table, start=1):
        if rank <= 15 or r in (paper, best_single):
            cells = [f"{r['dev'][run.name][n]:.3f}" for run in runs for n in DEV]
            print(f"| {rank} | {r['setting']} | {r['mean']:.3f} | " + " | ".join(cells) + f" | {r['seconds']:.2f} |")
    print(f"\n{len(table)} settings; the paper's (L1 pc none) ranks {table.index(paper) + 1}.\n")
    print("## Held-out sets (not used to rank)\n")
    hcols = [f"{run.name} {n}" for run in runs for n in HELD_OUT]
    print("| setting | " + " | ".join(hcols) + " |")
    print("|---|" + "---:|" * len(hcols))
    for r in chosen:
        cells = []
        for run in runs:
            words, x = vectors(caches[run], run, r["layers"], r["pooling"], r["post"])
            cells += [f"{v:.3f}" for v in held_out(to_keyed_vectors(words, x), hold).values()]
        print(f"| {r['setting']} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
