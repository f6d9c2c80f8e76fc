"""What each size saving costs: export one layer with every dtype / --dims / --top-words setting, read it back
through the export's own loader, and score it.

    python benchmarks/compression.py outputs/minilm-sts --layer 1

Sizes are of the ``npy`` export (vectors + scale + vocab) on disk. Scores use the ``standard`` OOV
policy with coverage, so a pruned vocabulary shows what it loses in coverage too.
"""

from __future__ import annotations

import argparse
import tempfile

from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import evaluate_analogy, evaluate_similarity
from distill.serve.export import export_run
from distill.serve.formats import Format, read_npy

SETTINGS = [
    {},
    {"dtype": "float16"},
    {"dtype": "int8", "scale": "vector"},
    {"dtype": "int8", "scale": "dimension"},
    {"dims": 256},
    {"dims": 128},
    {"dims": 64},
    {"dims": 128, "dtype": "int8"},
    {"top_words": 5000},
    {"top_words": 2000},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--layer", type=int, default=None)
    parser.add_argument("--pooling", default="pc")
    args = parser.parse_args()
    sims = {name: load_benchmark(name) for name in ("simlex999", "men", "ws353", "rw")}
    google = load_benchmark("google")
    print("| setting | MB on disk | SimLex | MEN | WS353 | RW | Google 3CosAdd |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for setting in SETTINGS:
            (path, size), *_ = export_run(
                args.run_dir, layer=args.layer, pooling=args.pooling, formats=[Format.NPY], out=tmp, **setting
            )
            kv = read_npy(path)
            cells = [f"{(s := evaluate_similarity(kv, d)).score:.3f} ({s.n_covered})" for d in sims.values()]
            g = evaluate_analogy(kv, google)[0]
            label = ", ".join(f"{k}={v}" for k, v in setting.items()) or "float32 (as distilled)"
            print(f"| {label} | {size / 1e6:.2f} | " + " | ".join(cells) + f" | {g.score:.3f} ({g.n_covered}) |")


if __name__ == "__main__":
    main()
