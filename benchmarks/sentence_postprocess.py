"""Would an exported sentence model gain from a linear post-processing of its sentence vectors?

    python benchmarks/sentence_postprocess.py RUN [--sentences 50000] [--top 1,2,3,5] [--whiten 128,256,full]

A sentence of a model2vec export is the mean of its tokens' rows, so any affine map of the sentence vectors
(centring, removing the top principal directions, whitening) can be baked into the rows themselves: each row
``r`` becomes ``W r - c`` and every sentence's mean follows. The statistics come from a seeded sample of the
run's own teacher sentences (``teacher.npz``: corpus text, no STS text), read by the run's exported
``model2vec`` folder; each map is scored on STS as the export would be after baking it in: all pairs of
2012-2014 (dev, what a choice would be made on) and the MTEB splits.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from model2vec import StaticModel
from sts_columns import STS_HEADER, sts_cells  # benchmarks/, this script's folder

from distill.evaluation.sentences import load_sts, score_sts
from distill.tune.teacher import read_teacher


def maps(sample: np.ndarray, top: list[int], whiten: list[str]) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Each post-processing by name, fitted on ``sample`` (n, dim) sentence vectors."""
    mean = sample.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov((sample - mean).T))
    values, vectors = values[::-1], vectors[:, ::-1]
    out: dict[str, Callable[[np.ndarray], np.ndarray]] = {"none": lambda e: e, "centred": lambda e: e - mean}
    for k in top:
        u = vectors[:, :k]
        out[f"centred, top {k} removed"] = lambda e, u=u: (e - mean) - (e - mean) @ u @ u.T
    for spec in whiten:
        k = len(values) if spec == "full" else int(spec)
        w = vectors[:, :k] / np.sqrt(values[:k])
        out[f"whitened, {spec}"] = lambda e, w=w: (e - mean) @ w
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument("--top", default="1,2,3,5")
    parser.add_argument("--whiten", default="128,256,full")
    args = parser.parse_args()
    model = StaticModel.from_pretrained(str(args.run / "model2vec"))
    texts = read_teacher(args.run).texts
    chosen = np.random.default_rng(0).choice(len(texts), min(args.sentences, len(texts)), replace=False)
    sample = model.encode([texts[i] for i in chosen], show_progress_bar=False).astype(np.float64)
    pairs = load_sts()
    print(f"| post-processing | {STS_HEADER} |")
    print("|---|" + "---:|" * 8)
    fitted = maps(sample, [int(k) for k in args.top.split(",")], args.whiten.split(","))
    for name, post in fitted.items():
        encode = lambda s, post=post: post(model.encode(s, show_progress_bar=False).astype(np.float64))  # noqa: E731
        score = score_sts(encode, pairs, name)
        print(f"| {name} | {sts_cells(score)} |", flush=True)


if __name__ == "__main__":
    main()
