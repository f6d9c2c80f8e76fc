"""What a smaller static sentence model costs: export one set of a run as a model2vec folder for every
dtype x dimensions x vocabulary setting, load each with model2vec's own loader, and score it on STS as the
field does (the MTEB splits: STS12's test split and STS13-16), with its size on disk and its speed.

    python benchmarks/sentence_compression.py outputs/model [--set best] [--top-words 30000]

Speed is sentences/s encoding both sides of every STS pair through ``StaticModel.encode`` on this machine
(one process, whatever the machine gives it), so compare rows of one run only.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from pathlib import Path

from distill.evaluation.sentences import load_sts, model2vec_encoder, score_sts
from distill.serve.export import export_run
from distill.serve.formats import Format, size_on_disk

DTYPES = ("float32", "float16", "int8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--set", dest="vector_set", default="best")
    parser.add_argument("--dims", default="full,256,128", help="comma-separated; full keeps every dimension")
    parser.add_argument("--top-words", type=int, default=30000, help="the smaller vocabulary's size")
    args = parser.parse_args()
    pairs = load_sts()
    dims = [None if d == "full" else int(d) for d in args.dims.split(",")]
    print(f"{args.run_dir}, set {args.vector_set}: model2vec folders read by StaticModel.from_pretrained")
    print()
    print("| dtype | dims | vocabulary | MB on disk | STS12 (test) | STS13 | STS14 | STS15 | STS16 | MTEB 12-16 "
          "| STS 13-16 | sentences/s |")  # fmt: skip
    print("|---|---:|---|---:|" + "---:|" * 8)
    with tempfile.TemporaryDirectory() as tmp:
        for dtype, dim, top in itertools.product(DTYPES, dims, (None, args.top_words)):
            out = Path(tmp) / f"{dtype}-{dim}-{top}"
            (path, _), *_ = export_run(args.run_dir, vector_set=args.vector_set, formats=[Format.MODEL2VEC], out=out,
                                       dtype=dtype, scale="vector", dims=dim, top_words=top)  # fmt: skip
            score = score_sts(model2vec_encoder(path), pairs, path.name)
            splits = " | ".join(f"{v:.1f}" for v in score.mteb().values())
            print(f"| {dtype} | {dim or 'full'} | {f'top {top:,}' if top else 'all'} | "
                  f"{size_on_disk(path) / 1e6:.2f} | {splits} | {score.mteb_mean():.1f} | {score.mean_13_16():.1f} | "
                  f"{score.sentences_per_second:,.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
