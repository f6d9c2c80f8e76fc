"""Which layers should the recommended set combine, and with what weight of the words read alone? Every pair scored.

    python benchmarks/layer_sweep.py outputs/RUN --ranges 6-10,8-10,8-12 --alone 0,0.25,0.5,1

For a finished run that wrote each layer's ``mean`` set (``distill run --layers 6-12 --pooling mean``), each
range's layers are combined as ``--best`` combines them (the mean of unit vectors), and each weight W adds W
times the word's unit reading alone in those layers, read in the run's prompt (``distill run --alone-weight
W``); a word the corpus lacks is its reading alone (``--oov alone``), so every pair is scored. The dev mean is
that of SimLex-999, MEN, WS353 and WS353's sim and rel halves; RW is held out (issue 34): shown, never chosen
on. Applied to the benchmarks' words only, which gives the scores of applying it to all: a word's vector
depends only on the word.

With ``--analogies``, each row also scores the Google analogies (3CosAdd; a dev set of issue 34) on the questions
the run's vocabulary covers, every one of its words mixed as above (W > 0 reads all of them alone): whether the
layers the similarity sets prefer are those the analogies prefer (the quality sweep found lower layers better on
analogies, when they were held out).
"""

from __future__ import annotations

import argparse

import numpy as np

from distill.config import Layers
from distill.encoding.alone import encode_alone
from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import Oov, evaluate_analogy, evaluate_similarity
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
    parser.add_argument("--ranges", required=True, help="layer ranges, e.g. 8-8,8-10,20-30; + joins two: 1+4-6")
    parser.add_argument("--alone", default="0,0.25,0.5,1", help="weights W of the words read alone")
    parser.add_argument("--analogies", action="store_true", help="also Google 3CosAdd over the run's vocabulary")
    args = parser.parse_args()
    run = RunDir(args.run)
    manifest = run.manifest()
    labels = args.ranges.split(",")
    ranges = [Layers.parse(r.replace("+", ",")).resolve(int(manifest["model"]["n_layers"])) for r in labels]
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
    analogies = Analogies(sets, reader, layers, lowercase, any(weights)) if args.analogies else None
    held_out = " | ".join(f"{n} (held out)" for n in HELD_OUT)
    google = " | Google 3CosAdd, covered" if analogies else ""
    print("| layers | W | " + " | ".join(DEV) + f" | dev mean | {held_out}{google} |")
    print("|---|---:|" + "---:|" * (len(DEV) + 1 + len(HELD_OUT) + bool(analogies)))
    for span, chosen in zip(labels, ranges, strict=True):
        own = combine([np.array([sets[layer][w] if k else np.ones(sets[layer].vector_size) for w, k in
                                 zip(words, known)], dtype=np.float32) for layer in chosen])  # fmt: skip
        read = combine([alone[layer] for layer in chosen])
        for w in weights:
            mixed = np.where(known[:, None], l2_normalize(own) + w * l2_normalize(read), read).astype(np.float32)
            kv = to_keyed_vectors(words, mixed)
            scores = {n: 100 * evaluate_similarity(kv, d, Oov.PAPER, lowercase).score for n, d in data.items()}
            dev = np.mean([scores[n] for n in DEV])
            cells = [f"{scores[n]:.1f}" for n in DEV] + [f"{dev:.2f}"] + [f"{scores[n]:.1f}" for n in HELD_OUT]
            cells += [analogies.score(chosen, w)] if analogies else []
            print(f"| {span} | {w:g} | " + " | ".join(cells) + " |", flush=True)


class Analogies:
    """The Google analogies on the run's whole vocabulary, its layers combined and mixed as the rows say."""

    def __init__(self, sets: dict, reader: AloneFallback, layers: list[int], lowercase: bool, read: bool) -> None:
        self.sets, self.lowercase, self.data = sets, lowercase, load_benchmark("google")
        self.words = list(sets[layers[0]].index_to_key)
        encoded = encode_alone(reader.encoder, self.words, tuple(layers), template=reader.template) if read else None
        self.alone = dict(zip(layers, encoded)) if encoded is not None else {}

    def score(self, chosen: list[int], w: float) -> str:
        own = l2_normalize(combine([self.sets[layer].vectors for layer in chosen]))
        mixed = own + w * l2_normalize(combine([self.alone[layer] for layer in chosen])) if w else own
        found = evaluate_analogy(to_keyed_vectors(self.words, mixed.astype(np.float32)), self.data,
                                 lowercase=self.lowercase)  # fmt: skip
        total = next(s for s in found if s.section == "all")
        return f"{100 * total.score:.1f} % ({total.n_covered:,})"


if __name__ == "__main__":
    main()
