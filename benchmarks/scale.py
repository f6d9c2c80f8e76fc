"""Scaling: wall time, peak RSS and tokens encoded as the corpus grows, for uniform and greedy sampling.

    .venv/bin/python benchmarks/scale.py [--sizes 1,2,4,8] [--vocab-size 20000] [--cap 100] [--layers 1]

The corpora are the first N million words (whole paragraphs) of the Gutenberg sample. The vocabulary
is fixed across sizes: the ``--vocab-size`` most frequent alphabetic words of the whole sample, so the
store has the same words at every size and fills up as the corpus grows. Each run is a separate
``distill run`` process, whose own peak RSS is read from ``getrusage`` at its end. At the largest size
both samplings' vectors are scored on SimLex-999, MEN and WS353 (they should not differ much).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from distill.corpus import WORD_RE, iter_lines
from distill.paths import data_dir

RUNNER = """
import json, resource, sys, time
import distill
options = json.loads(sys.argv[1])
t0 = time.perf_counter()
result = distill.run(**options)
wall = time.perf_counter() - t0
m = result.manifest
print(json.dumps({"wall": wall, "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "tokens": m["encoding"]["tokens"], "words": m["corpus"]["words"], "lines": m["corpus"]["lines"],
                  "rows": m["occurrences"]["planned"], "sampling": m["occurrences"]["sampling"],
                  "store_dtype": m["occurrences"]["store_dtype"], "timings": m["timings_seconds"]}))
"""


def slice_corpus(source: Path, words: int, path: Path) -> None:
    n = 0
    with open(source, encoding="utf-8") as handle, open(path, "w", encoding="utf-8") as out:
        for line in handle:
            out.write(line)
            n += len(line.split())
            if n >= words:
                break


def top_words(source: Path, size: int) -> list[str]:
    counts: Counter[str] = Counter()
    for text in iter_lines([str(source)]):
        counts.update(w.lower() for w in WORD_RE.findall(text))
    return [w for w, _ in sorted(((w, c) for w, c in counts.items() if w.isalpha()), key=lambda x: (-x[1], x[0]))][
        :size
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,8", help="corpus sizes in millions of words")
    parser.add_argument("--vocab-size", type=int, default=20000)
    parser.add_argument("--cap", type=int, default=100)
    parser.add_argument("--layers", default="1")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sampling", default="uniform,greedy")
    parser.add_argument("--keep", help="keep corpora and runs in this folder (default: a temporary one)")
    args = parser.parse_args()

    source = data_dir() / "corpus" / "gutenberg" / "gutenberg_en_sample.txt"
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="distill-scale-"))
    tmp.mkdir(parents=True, exist_ok=True)
    vocab_file = tmp / "vocab.txt"
    vocab_file.write_text("\n".join(top_words(source, args.vocab_size)) + "\n", encoding="utf-8")
    sizes = [float(s) for s in args.sizes.split(",")]
    rows = []
    for size in sizes:
        corpus = tmp / f"gutenberg-{size:g}m.txt"
        if not corpus.exists():
            slice_corpus(source, int(size * 1e6), corpus)
        for sampling in args.sampling.split(","):
            out = tmp / f"run-{size:g}m-{sampling}"
            options = {"model": args.model, "corpus": [str(corpus)], "out": str(out), "layers": args.layers,
                       "vocab_file": str(vocab_file), "max_occurrences": args.cap, "sampling": sampling,
                       "progress": False, "resume": False}  # fmt: skip
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(options)], capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
            record = json.loads(done.stdout.strip().splitlines()[-1])
            record.update(size=size, sampling_method=sampling, process_wall=time.perf_counter() - t0, out=str(out))
            rows.append(record)
            print(json.dumps(record), flush=True)

    print(f"\nvocabulary: the {args.vocab_size:,} most frequent words of the sample; cap {args.cap}; "
          f"layers {args.layers}; {args.model}\n")  # fmt: skip
    print("| words | sampling | rows in store | lines encoded | share of lines skipped | tokens encoded | wall s "
          "| s per M words | peak RSS GB |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        s = r["sampling"]
        print(f"| {r['words']:,} | {r['sampling_method']} | {r['rows']:,} | {s['sentences_encoded']:,} | "
              f"{s['share_skipped']:.1%} | {r['tokens']:,} | {r['wall']:.1f} | {r['wall'] / (r['words'] / 1e6):.1f} "
              f"| {r['rss_gb']:.2f} |")  # fmt: skip

    largest = [r for r in rows if r["size"] == max(sizes)]
    if len(largest) > 1:
        from distill.evaluation.datasets import load_similarity
        from distill.evaluation.metrics import evaluate_similarity
        from distill.rundir import load

        layer = int(args.layers.split(",")[0].split("-")[0]) if args.layers != "all" else 1
        print(f"\nlayer {layer} first PC at {largest[0]['words']:,} words, Spearman (pairs scored):")
        for r in largest:
            kv = load(r["out"], layer=layer)
            scores = []
            for name in ("simlex999", "men", "ws353"):
                score = evaluate_similarity(kv, load_similarity(name))
                scores.append(f"{name} {score.score:.3f} ({score.n_covered})")
            print(f"- {r['sampling_method']}: " + ", ".join(scores))


if __name__ == "__main__":
    main()
