"""The most the host can feed any accelerator: everything the pipeline does per batch on the host, with the
forward pass replaced by nothing, next to the bare fast tokenizer (batched) on the same sentences.

    python benchmarks/host_ceiling.py [--corpus FILE] [--model minilm] [--batch-tokens 32768] [--workers N]

Host work measured: reading the corpus, counting words, building the vocabulary and the sample, walking the
corpus for the sampled sentences, tokenizing them into windows, aligning each occurrence to its pieces,
length-sorting and assembling padded ``(B, T)`` id and mask tensors of token-budget batches (pinned where
CUDA is there), chunks tokenized and aligned by ``--workers`` processes (default: the cores; 0: in this
process), as a GPU run does. Prints tokens/s of each, per core, and their ratio; with workers, also the CPU
seconds the main process spent (the walk, sending chunks out and rebuilding them, batching): the part no
number of workers spreads, so the most the host reaches on a machine with cores enough.

``--stages`` also runs each stage alone, one after the other, and prints its wall and CPU seconds and the
best ratio the cores allow: the stages before the first sentence can be tokenized (reading, counting,
planning) in series, then every other stage's CPU seconds spread perfectly over the cores.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Only light imports here: each tokenizing worker imports this script again (multiprocessing does), and torch
# at the top would cost every worker seconds to start (RESULTS.md, GPU path). torch loads inside the functions.
from sentence_jobs import sentence_jobs  # benchmarks/, this script's folder

from distill.collector import heap_frozen
from distill.config import GPU_BATCH_TOKENS, RunConfig
from distill.corpus import build_vocabulary, count_words, iter_lines
from distill.encoders import load_encoder
from distill.encoders.alignment import make_windows
from distill.encoding.prepare import Batch
from distill.encoding.workers import given_or_own_pool, sort_prepared, usable_cores
from distill.iterate import batched
from distill.occurrences import iter_jobs, plan_sample
from distill.paths import default_corpus, resolve_model


def assemble(batch: Batch, pin: bool) -> int:
    """The tensors the encoder and the gathering make of one batch, on the host; returns its real tokens."""
    import torch

    tensors = [torch.from_numpy(a) for a in (batch.ids, batch.real, batch.tok, batch.pieces)]
    if pin:
        tensors = [t.pin_memory() for t in tensors]
    return batch.tokens


def cpu_seconds() -> float:
    """CPU time of this process (its threads included, its worker processes not)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def host_pass(corpus: str, model: object, config: RunConfig, workers: int) -> tuple[int, float, float]:
    """Tokens the host prepares, the seconds it takes from the corpus file to assembled batches, and the CPU
    seconds of the main process in that time."""
    import torch

    from distill.encoding.batches import ChunkDone, iter_batches

    t0, c0 = time.perf_counter(), cpu_seconds()
    lowercase = model.uncased  # type: ignore[attr-defined]
    tokens, pin = 0, torch.cuda.is_available()
    with given_or_own_pool(None, workers, "cuda") as pool, heap_frozen():  # as the encoding pass runs
        jobs = sentence_jobs([corpus], lowercase, 5, config.max_occurrences, config.seed, pool.map if pool else None)
        batches = iter_batches(model, jobs, stride=config.stride, batch_tokens=config.batch_tokens,  # type: ignore[arg-type]
                               pool=pool)  # fmt: skip
        for batch in batches:
            if not isinstance(batch, ChunkDone):
                tokens += assemble(batch, pin)
    return tokens, time.perf_counter() - t0, cpu_seconds() - c0


def bare_tokenizer(corpus: str, model: object, batch: int = 4096) -> tuple[int, float]:
    """The fast tokenizer alone, batched, on every line of the corpus."""
    lines = list(iter_lines([corpus]))
    backend = model.tokenizer.backend_tokenizer  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    tokens = 0
    for lo in range(0, len(lines), batch):
        tokens += sum(len(e.ids) for e in backend.encode_batch(lines[lo : lo + batch]))
    return tokens, time.perf_counter() - t0


SERIAL = ("read", "count", "plan")  # before the first sentence can be tokenized


def stage_seconds(corpus: str, model: object, config: RunConfig) -> tuple[dict[str, tuple[float, float]], int]:
    """Each host stage alone, in order, over the whole corpus: its (wall, CPU) seconds; and the tokens."""
    import torch

    from distill.encoding.batches import make_batch, token_batches

    timings: dict[str, tuple[float, float]] = {}

    @contextmanager
    def timed(name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), cpu_seconds()
        yield
        timings[name] = (time.perf_counter() - t0, cpu_seconds() - c0)

    lowercase = model.uncased  # type: ignore[attr-defined]
    with heap_frozen():  # as the encoding pass runs
        with timed("read"):
            lines = list(iter_lines([corpus]))
        with timed("count"):
            counts = count_words(iter(lines), lowercase)
        with timed("plan"):
            vocab = build_vocabulary(counts, lowercase=lowercase, min_count=5)
            sample = plan_sample(vocab.counts, config.max_occurrences, config.seed)
        with timed("walk"):
            jobs = list(iter_jobs(iter(lines), vocab, sample))
        chunks = list(batched(jobs, config.chunk_size))
        backend = model.window_tokenizer(config.stride).backend  # type: ignore[attr-defined]
        texts = [[job.text for job in chunk] for chunk in chunks]
        with timed("tokenizer"):
            encodings = [backend.encode_batch(chunk, add_special_tokens=True) for chunk in texts]
        with timed("windows"):
            for chunk_encodings in encodings:
                make_windows(chunk_encodings)
        with timed("prepare"):  # the tokenizer and the windows again, then aligning and length-sorting
            prepared = [sort_prepared(model, chunk, config.stride)[0] for chunk in chunks]  # type: ignore[arg-type]
        tokens = 0
        with timed("batches"):
            for chunk, jobs_of_chunk in zip(prepared, chunks):
                for cut in token_batches(chunk, config.batch_tokens or GPU_BATCH_TOKENS):
                    tokens += assemble(make_batch(cut, jobs_of_chunk), torch.cuda.is_available())
    return timings, tokens


def print_stages(timings: dict[str, tuple[float, float]], tokens: int, bare_rate: float, cores: int) -> None:
    """The stages' seconds and the best ratio to the bare tokenizer the cores allow."""
    wall, cpu = ({k: v[i] for k, v in timings.items()} for i in (0, 1))
    cpu["align and sort"] = cpu["prepare"] - cpu["tokenizer"] - cpu["windows"]  # prepare ran all three
    shown = ("read", "count", "plan", "walk", "tokenizer", "windows", "align and sort", "batches")
    for name in shown:
        print(f"  {name:16s} {cpu[name]:6.3f} CPU s" + (f" ({wall[name]:.3f} s wall)" if name in wall else ""))
    serial = sum(wall[k] for k in SERIAL)
    spread = sum(cpu[k] for k in ("walk", "prepare", "batches"))
    best = serial + spread / cores
    besides = sum(cpu[k] for k in shown) - cpu["tokenizer"]
    print(f"host work besides the tokenizer: {besides:.3f} CPU s; best on {cores} "
          f"cores: {serial:.3f} s in series + {spread:.3f} CPU s / {cores} = {best:.3f} s = "
          f"{tokens / best:,.0f} tokens/s, ratio {tokens / best / bare_rate:.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch-tokens", type=int, default=GPU_BATCH_TOKENS)
    parser.add_argument("--workers", type=int, default=None, help="tokenizing processes (default: the cores)")
    parser.add_argument("--stages", action="store_true", help="also time each stage alone, and the best ratio")
    args = parser.parse_args()
    config = RunConfig(model=args.model, progress=False, batch_tokens=args.batch_tokens)
    model = load_encoder(config.model, resolve_model(config.model), (1,), device="cpu")
    cores = usable_cores()
    bare_tokens, bare_seconds = bare_tokenizer(args.corpus, model)
    workers = cores if args.workers is None else args.workers
    host_tokens, host_seconds, main_cpu = host_pass(args.corpus, model, config, workers)
    bare_rate, host_rate = bare_tokens / bare_seconds, host_tokens / host_seconds
    print(f"cores: {cores}; corpus: {args.corpus}; model: {config.model}; batches of {args.batch_tokens} "
          f"padded tokens; {workers} tokenizing workers")  # fmt: skip
    print(f"bare fast tokenizer (batched, every line): {bare_tokens:,} tokens in {bare_seconds:.2f} s = "
          f"{bare_rate:,.0f} tokens/s ({bare_rate / cores:,.0f} per core)")  # fmt: skip
    print(f"host pipeline, no forward pass (sampled sentences): {host_tokens:,} tokens in {host_seconds:.2f} s = "
          f"{host_rate:,.0f} tokens/s ({host_rate / cores:,.0f} per core)")  # fmt: skip
    print(f"ratio host / bare tokenizer: {host_rate / bare_rate:.3f}")
    if workers:  # what stays in one process however many workers tokenize: the walk, unpacking, batching
        print(f"main process: {main_cpu:.2f} CPU s = {host_tokens / main_cpu:,.0f} tokens per CPU second, the most "
              "any number of workers can reach")  # fmt: skip
    if args.stages:
        print("each stage alone, in order:")
        print_stages(*stage_seconds(args.corpus, model, config), bare_rate, cores)


if __name__ == "__main__":
    main()
