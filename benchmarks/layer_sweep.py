"""Which layers should the recommended set combine, and with what weight of the words read alone? Every pair scored.

    python benchmarks/layer_sweep.py outputs/RUN --ranges 6-10,8-10,8-12 --alone 0,0.25,0.5,1

For a finished run that wrote each layer's ``mean`` set (``distill run --layers 6-12 --pooling mean``), each
range's layers are combined as ``--best`` combines them (the mean of unit vectors), and each weight W adds W
times the word's unit reading alone in those layers, read in the run's prompt (``distill run --alone-weight
W``); a word the corpus lacks is its reading alone (``--oov alone``), so every pair is scored. The dev mean is
that of SimLex-999, MEN, WS353 and WS353's sim and rel halves; RW is held out (issue 34): shown, never chosen
on. Applied to the benchmarks' words only, which gives the scores of applying it to all: a word's vector
depends only on the word.
"""

from __future__ import annotations

import argparse

import numpy as np

from distill.config import Layers
from distill.encoding.alone import encode_alone
from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import Oov, evaluate_similarity
from distill.evaluation.report import dataset_words
from distill.rundir import RunDir
from distill.serve.alone import AloneFallback
from distill.vectors.keyed import l2_normalize, to_keyed_vectors
from distill.vectors.postprocess import combine

DEV = ("simlex999", "men", "ws353", "ws353_sim", "ws353_rel")
HELD_OUT = ("rw",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--ranges", required=True, help="layer ranges, e.g. 8-8,8-10,20-30")
    parser.add_argument("--alone", default="0,0.25,0.5,1", help="weights W of the words read alone")
    args = parser.parse_args()
    run = RunDir(args.run)
    manifest = run.manifest()
    ranges = [Layers.parse(r).resolve(int(manifest["model"]["n_layers"])) for r in args.ranges.split(",")]
    weights = [float(w) for w in args.alone.split(",")]
    data = {name: load_benchmark(name) for name in DEV + HELD_OUT}
    lowercase = bool(manifest["vocabulary"]["lowercase"])
    words = sorted({w.lower() if lowercase else w for d in data.values() for w in dataset_words(d)})
    layers = sorted({layer for r in ranges for layer in r})
    sets = {layer: run.load(f"layer{layer}.mean") for layer in layers}
    index = sets[layers[0]].key_to_index
    known = np.array([w in index for w in words])
    reader = AloneFallback.for_layers(manifest, layers, None)
    alone = dict(zip(layers, encode_alone(reader.encoder, words, tuple(layers), template=reader.template)))
    print(f"{args.run}: {len(words):,} benchmark words, {known.sum():,} in the corpus vocabulary; "
          f"read alone in {reader.template}")  # fmt: skip
    held_out = " | ".join(f"{n} (held out)" for n in HELD_OUT)
    print("| layers | W | " + " | ".join(DEV) + f" | dev mean | {held_out} |")
    print("|---|---:|" + "---:|" * (len(DEV) + 1 + len(HELD_OUT)))
    for chosen in ranges:
        own = combine([np.array([sets[layer][w] if k else np.ones(sets[layer].vector_size) for w, k in
                                 zip(words, known)], dtype=np.float32) for layer in chosen])  # fmt: skip
        read = combine([alone[layer] for layer in chosen])
        for w in weights:
            mixed = np.where(known[:, None], l2_normalize(own) + w * l2_normalize(read), read).astype(np.float32)
            kv = to_keyed_vectors(words, mixed)
            scores = {n: 100 * evaluate_similarity(kv, d, Oov.PAPER, lowercase).score for n, d in data.items()}
            span = f"{chosen[0]}-{chosen[-1]}" if len(chosen) > 1 else str(chosen[0])
            dev = np.mean([scores[n] for n in DEV])
            cells = [f"{scores[n]:.1f}" for n in DEV] + [f"{dev:.2f}"] + [f"{scores[n]:.1f}" for n in HELD_OUT]
            print(f"| {span} | {w:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
