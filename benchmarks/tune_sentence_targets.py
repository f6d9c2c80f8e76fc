"""Does tuning toward the teacher's embeddings of single sentences (not whole corpus lines) help STS?

    python benchmarks/tune_sentence_targets.py outputs/model-gutenberg-2m-pieces \\
        --corpus outputs/corpora/gutenberg-2m.txt [--sentences 60000] [--lr 1e-3]

``distill tune`` trains toward the teacher's embedding of every encoded corpus line; a Gutenberg line is a
paragraph (50 words on average), far from STS's sentences. Here the teacher (sentence-transformers, its own
pooling: a second pass, which the pipeline does not make) embeds a seeded sample of the corpus's sentences
(4-40 words, split after . ! ?), a copy of the run (hard links) is tuned toward them, and the tuned and
untuned sets are scored on STS as their model2vec exports read sentences (pieces for unknown words).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from distill.evaluation.sentences import DEV_YEARS, HELD_OUT_YEARS, load_sts, score_inputs
from distill.rundir import MANIFEST, RunDir
from distill.tune.options import TuneOptions
from distill.tune.teacher import TEACHER_FILE, _pack
from distill.tune.train import tune_run


def sample_sentences(corpus: Path, n: int, seed: int) -> list[str]:
    sentences = []
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            sentences += [s for s in re.split(r"(?<=[.!?])\s+", line.strip()) if 4 <= len(s.split()) <= 40]
    pick = np.random.default_rng(seed).choice(len(sentences), size=min(n, len(sentences)), replace=False)
    return [sentences[i] for i in sorted(pick)]


def copy_run(run: Path, to: Path) -> None:
    """Hard links of the run's files, without its tuned sets (the manifest copied and edited)."""
    manifest = json.loads((run / MANIFEST).read_text(encoding="utf-8"))
    tuned = {name for name, recipe in manifest.get("derived", {}).items() if "tuned_from" in recipe}
    manifest["files"] = [f for f in manifest["files"] if not any(f.startswith(t + ".") for t in tuned)]
    manifest["derived"] = {k: v for k, v in manifest.get("derived", {}).items() if k not in tuned}
    to.mkdir(parents=True)
    for name in manifest["files"]:
        (to / name).hardlink_to(run / name)
    (to / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=60_000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    manifest = RunDir(args.run).manifest()
    texts = sample_sentences(args.corpus, args.sentences, args.seed)
    teacher = SentenceTransformer(manifest["model"]["source"], device="cpu", local_files_only=True)
    t0 = time.perf_counter()
    embeddings = teacher.encode(texts, batch_size=128, show_progress_bar=True)
    print(f"teacher: {len(texts):,} sentences in {time.perf_counter() - t0:.0f} s")
    with tempfile.TemporaryDirectory(prefix="distill-tune-") as tmp:
        copy = Path(tmp) / "run"
        copy_run(args.run, copy)
        (copy / TEACHER_FILE).unlink(missing_ok=True)  # a hard link: never write through it into the run
        with open(copy / TEACHER_FILE, "wb") as handle:
            np.savez(handle, embeddings=embeddings.astype(np.float16), texts=_pack(texts))
        best = manifest["best"]
        name, _, result = tune_run(copy, best, options=TuneOptions(learning_rate=args.lr, seed=args.seed))
        loss = result.history[result.best_epoch]["held_out"]
        print(f"tuned: best epoch {result.best_epoch}, held-out cosine loss {result.history[0]['held_out']:.3f} "
              f"-> {loss:.3f}")  # fmt: skip
        pairs = load_sts()
        for vector_set in (best, name):
            (score,) = score_inputs([copy], vector_set, pairs)
            print(f"{vector_set}: " + " ".join(f"STS{y % 100} {v:.1f}" for y, v in score.per_year.items())
                  + f" | dev {score.mean(DEV_YEARS):.1f} held out {score.mean(HELD_OUT_YEARS):.1f} "
                  f"mean {score.mean():.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
