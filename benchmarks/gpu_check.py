"""GPU path check: the same run on CPU and GPU gives the same vectors; throughput on the GPU.

    python benchmarks/gpu_check.py --tokenizer DIR --corpus FILE [--lines 2000]

Builds a randomly initialised BERT-base-sized model (12 layers, 768 hidden: the paper's size) with a
real WordPiece tokenizer, saves it as a local folder, distils the first ``--lines`` lines on the CPU
(float32) and on the GPU (float32 and the default bf16), and prints the cosine between each word's
CPU and GPU vector per layer. No weights need to travel: the model is built from a seeded config.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus_head import write_head  # benchmarks/, this script's folder

import distill


def build_model(tokenizer_dir: str, out: Path, config_file: str | None = None) -> Path:
    """A seeded random BERT with the tokenizer in ``tokenizer_dir``: BERT-base's shape, or the shape the
    ``config.json`` at ``config_file`` gives (MiniLM's: its speed without its weights)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    # bert-base: 12 layers, 768 hidden, 12 heads, unless the file says otherwise
    config = BertConfig.from_json_file(config_file) if config_file else BertConfig(vocab_size=len(tokenizer))
    BertModel(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--model-dir", default=None, help="where to save the random model (default: a temp folder)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    model = build_model(args.tokenizer, Path(args.model_dir or tmp / "bert-base-random"))
    corpus = write_head(args.corpus, args.lines, tmp / "corpus.txt")
    common = {"model": str(model), "corpus": str(corpus), "layers": "0,1,6,12", "progress": False}
    runs = {
        "cpu-fp32": distill.run(out=str(tmp / "cpu"), device="cpu", **common),
        "cuda-fp32": distill.run(out=str(tmp / "cuda32"), device="cuda", dtype="float32", **common),
        "cuda-auto": distill.run(out=str(tmp / "cuda"), device="cuda", **common),
    }
    reference = runs["cpu-fp32"]
    for name, result in runs.items():
        t = result.manifest["timings_seconds"]
        rate = result.manifest["encoding"]["tokens_per_second"]
        print(
            f"{name:10s} dtype {result.manifest['model']['dtype']:9s} encode {t['encode']:6.2f} s "
            f"reduce+write {t['reduce_and_write']:5.2f} s  {rate:,.0f} tok/s"
        )
        if result is reference:
            continue
        for layer in (0, 1, 6, 12):
            a, b = reference[layer], result[layer]
            assert a.index_to_key == b.index_to_key
            cos = np.einsum("ij,ij->i", a.get_normed_vectors(), b.get_normed_vectors())
            print(f"  layer {layer:2d}: cosine to CPU fp32 min {cos.min():.6f} median {np.median(cos):.6f}")


if __name__ == "__main__":
    main()
