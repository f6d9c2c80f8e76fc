"""Pipeline throughput against the bare forward pass of the same model on the same batches.

    .venv/bin/python benchmarks/throughput.py [--model minilm] [--layers all] [--lines N] [--device cuda]
                                             [--batch-tokens N]

In one process: (1) build the pipeline's own length-sorted batches of windows (batches of --batch-size
sentences on a CPU; on a GPU, token-budget batches of 32,768 padded tokens unless --batch-tokens says
otherwise) and time the bare forward pass over them (model cut to the same layers, the same dtype and
attention kernel, timed with one wait for the device at the end: the tuned forward); (2) run the whole
pipeline (read, count, sample, tokenize, align, forward, gather, store, reduce, write); (3) the bare pass again. Prints
tokens/s of each, their ratio (pipeline over the mean of the two bare passes), the same ratio for the
encoding stage alone, the reduction time and the peak RSS. Machines are noisy: only the ratio
measured side by side means much.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Only light imports here: each tokenizing worker imports this script again (multiprocessing does), and torch
# at the top would cost every worker seconds to start (RESULTS.md, GPU path). torch loads inside the functions.
from corpus_head import write_head  # benchmarks/, this script's folder
from sentence_jobs import sentence_jobs

from distill.config import Layers, RunConfig, token_budget
from distill.encoders import load_encoder, load_encoder_config
from distill.paths import default_corpus, resolve_model


def bare_forward(model, corpus: list[str], config: RunConfig, layers) -> tuple[int, float]:
    """Tokens and seconds of the forward passes alone, on the batches the pipeline builds; prints their shape."""
    import torch

    from distill.encoding.batches import ChunkDone, iter_batches

    lowercase = model.uncased
    jobs = sentence_jobs(corpus, lowercase, config.min_count, config.max_occurrences, config.seed)
    budget = token_budget(config.batch_tokens, model.device)
    batches = [batch for batch in iter_batches(model, jobs, batch_size=config.batch_size, stride=config.stride,
                                               chunk_size=config.chunk_size, batch_tokens=budget)
               if not isinstance(batch, ChunkDone)]  # fmt: skip
    tokens = sum(batch.tokens for batch in batches)
    padded = sum(batch.ids.size for batch in batches)
    shape = f"{budget}-token budget" if budget else f"{config.batch_size} sentences"
    print(f"bare forward: {len(batches):,} batches, {tokens / len(batches):,.0f} tokens each "
          f"({padded / len(batches):,.0f} padded; {shape}), attention {getattr(model, 'attention', None)}, "
          f"{str(model.dtype).removeprefix('torch.')}")  # fmt: skip
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    with torch.inference_mode():
        for batch in batches[-3:]:  # warm-up: first calls of the kernels are slow
            model.forward_padded(batch.ids, batch.real)
        sync()
        t0 = time.perf_counter()
        for batch in batches:
            model.forward_padded(batch.ids, batch.real)
        sync()  # one wait for the device, at the end
        seconds = time.perf_counter() - t0
    return tokens, seconds


def main() -> None:
    import torch

    from distill.pipeline import run_pipeline

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--layers", default="all")
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--lines", type=int, default=0, help="use only the first N lines (0: all)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-tokens", type=int, default=None, help="padded tokens per batch (0: --batch-size)")
    parser.add_argument("--chunk-size", type=int, default=4096, help="sentences length-sorted together")
    parser.add_argument("--pieces", action="store_true", help="also piece vectors (run's default; off here so the "
                        "ratio compares with the figures recorded before they were)")  # fmt: skip
    args = parser.parse_args()

    corpus = args.corpus
    tmp = Path(tempfile.mkdtemp(prefix="distill-bench-"))
    if args.lines:
        corpus = str(write_head(corpus, args.lines, tmp / "corpus.txt"))
    config = RunConfig(model=args.model, corpus=(corpus,), out=str(tmp / "out"), layers=args.layers,
                       device=args.device, progress=False, batch_tokens=args.batch_tokens,
                       chunk_size=args.chunk_size, pieces=args.pieces)  # fmt: skip
    source = resolve_model(args.model)
    model_config = load_encoder_config(args.model, source)
    layers = Layers.parse(args.layers).resolve(int(model_config.num_hidden_layers))
    model = load_encoder(args.model, source, layers, device=args.device, config=model_config)
    print(f"model {source} on {model.device}, layers {args.layers} ({model.layers_run} of {model.n_layers} run), "
          f"threads {torch.get_num_threads()}")  # fmt: skip

    tokens1, bare1 = bare_forward(model, [corpus], config, layers)
    t0 = time.perf_counter()
    result = run_pipeline(config)
    wall = time.perf_counter() - t0
    tokens2, bare2 = bare_forward(model, [corpus], config, layers)
    timings = result.manifest["timings_seconds"]
    tokens = result.manifest["encoding"]["tokens"]
    assert tokens == tokens1 == tokens2, (tokens, tokens1, tokens2)
    bare_rate = 2 * tokens / (bare1 + bare2)
    pipeline_seconds = wall - timings["load_model"]
    pipeline_rate = tokens / pipeline_seconds
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"tokens {tokens:,}  words {result.manifest['vocabulary']['size']:,}  "
          f"occurrences {result.manifest['occurrences']['encoded']:,}")  # fmt: skip
    print(f"bare forward      {bare_rate:10,.0f} tokens/s  ({tokens / bare1:,.0f} before, {tokens / bare2:,.0f} after)")
    print(f"pipeline          {pipeline_rate:10,.0f} tokens/s  ({pipeline_seconds:.1f} s without model load)")
    print(f"ratio             {pipeline_rate / bare_rate:10.3f}")
    encode_rate = tokens / timings["encode"]  # the streaming stage alone: read, tokenize, align, forward, store
    print(
        f"encoding stage    {encode_rate:10,.0f} tokens/s  (ratio {encode_rate / bare_rate:.3f}, without the "
        f"vocabulary count and the reduction, whose cost does not grow with the corpus once words are full)"
    )
    print(f"stages (s)        {timings}")
    print(f"peak RSS          {peak_gb:10.2f} GB")
    if model.device.type == "cuda":
        print(f"peak GPU memory   {torch.cuda.max_memory_allocated() / 2**30:10.2f} GiB")


if __name__ == "__main__":
    main()
