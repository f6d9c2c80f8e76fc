"""What a smaller static sentence model costs: export one set of a run as a model2vec folder for every
dtype x dimensions x vocabulary setting, load each with model2vec's own loader, and score it on STS as the
field does (the MTEB splits: STS12's test split and STS13-16), with its size on disk and its speed.

    python benchmarks/sentence_compression.py outputs/model [--set best] [--top-words 30000] [--repeats 5]

Speed is sentences/s encoding both sides of every STS pair through ``StaticModel.encode`` as a user calls it
(its defaults, one process on this machine). One timing of a 30,000-sentence call varies by a third on shared
cores, so every variant is timed ``--repeats`` times, the variants taking turns, and the best round is kept
(as ``timeit`` does): compare rows of one run only.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

from distill.evaluation.sentences import Encode, load_sts, model2vec_encoder, score_sts
from distill.serve.export import export_run
from distill.serve.formats import Format, size_on_disk

DTYPES = ("float32", "float16", "int8")


def best_speeds(encoders: list[Encode], sentences: list[str], repeats: int) -> list[float]:
    """Sentences/s of each encoder: the best of ``repeats`` rounds, each round timing every encoder."""
    best = [0.0] * len(encoders)
    for _ in range(repeats):
        for i, encode in enumerate(encoders):
            t0 = time.perf_counter()
            encode(sentences)
            best[i] = max(best[i], len(sentences) / (time.perf_counter() - t0))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--set", dest="vector_set", default="best")
    parser.add_argument("--dims", default="full,256,128", help="comma-separated; full keeps every dimension")
    parser.add_argument("--top-words", type=int, default=30000, help="the smaller vocabulary's size")
    parser.add_argument("--repeats", type=int, default=5, help="timing rounds; each variant's best is reported")
    args = parser.parse_args()
    pairs = load_sts()
    dims = [None if d == "full" else int(d) for d in args.dims.split(",")]
    rows, encoders = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype, dim, top in itertools.product(DTYPES, dims, (None, args.top_words)):
            out = Path(tmp) / f"{dtype}-{dim}-{top}"
            (path, _), *_ = export_run(args.run_dir, vector_set=args.vector_set, formats=[Format.MODEL2VEC], out=out,
                                       dtype=dtype, scale="vector", dims=dim, top_words=top)  # fmt: skip
            encoders.append(model2vec_encoder(path))
            score = score_sts(encoders[-1], pairs, path.name)
            splits = " | ".join(f"{v:.1f}" for v in score.mteb().values())
            rows.append(f"| {dtype} | {dim or 'full'} | {f'top {top:,}' if top else 'all'} | "
                        f"{size_on_disk(path) / 1e6:.2f} | {splits} | {score.mteb_mean():.1f} | "
                        f"{score.mean_13_16():.1f} |")  # fmt: skip
        speeds = best_speeds(encoders, pairs.first + pairs.second, args.repeats)
    print(f"{args.run_dir}, set {args.vector_set}: model2vec folders read by StaticModel.from_pretrained")
    print(f"(sentences/s: the best of {args.repeats} rounds of {len(pairs.first) * 2:,} sentences)")
    print()
    print("| dtype | dims | vocabulary | MB on disk | STS12 (test) | STS13 | STS14 | STS15 | STS16 | MTEB 12-16 "
          "| STS 13-16 | sentences/s |")  # fmt: skip
    print("|---|---:|---|---:|" + "---:|" * 8)
    for row, speed in zip(rows, speeds, strict=True):
        print(f"{row} {speed:,.0f} |")


if __name__ == "__main__":
    main()
