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
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from distill.collector import heap_frozen
from distill.config import GPU_BATCH_TOKENS, RunConfig
from distill.corpus import build_vocabulary, count_words, iter_lines
from distill.encoders import load_encoder
from distill.encoders.alignment import pad_windows
from distill.encoding.batches import ChunkDone, iter_batches
from distill.encoding.workers import usable_cores
from distill.occurrences import iter_jobs, plan_sample
from distill.paths import default_corpus, resolve_model


def assemble(batch: list, pin: bool) -> int:
    """The padded ids and mask of one batch, as the encoder builds them; returns its real tokens."""
    padded, real = pad_windows([p.window for p in batch])
    ids, mask = torch.from_numpy(padded), torch.from_numpy(real).long()
    if pin:
        ids, mask = ids.pin_memory(), mask.pin_memory()
    return int(real.sum())


def cpu_seconds() -> float:
    """CPU time of this process (its threads included, its worker processes not)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def host_pass(corpus: str, model: object, config: RunConfig, workers: int) -> tuple[int, float, float]:
    """Tokens the host prepares, the seconds it takes from the corpus file to assembled batches, and the CPU
    seconds of the main process in that time."""
    t0, c0 = time.perf_counter(), cpu_seconds()
    lowercase = model.uncased  # type: ignore[attr-defined]
    vocab = build_vocabulary(count_words(iter_lines([corpus]), lowercase), lowercase=lowercase, min_count=5)
    sample = plan_sample(vocab.counts, config.max_occurrences, config.seed)
    jobs = iter_jobs(iter_lines([corpus]), vocab, sample)
    tokens, pin = 0, torch.cuda.is_available()
    batches = iter_batches(model, jobs, stride=config.stride, batch_tokens=config.batch_tokens,  # type: ignore[arg-type]
                           workers=workers)  # fmt: skip
    with heap_frozen():  # as the encoding pass runs
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch-tokens", type=int, default=GPU_BATCH_TOKENS)
    parser.add_argument("--workers", type=int, default=None, help="tokenizing processes (default: the cores)")
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


if __name__ == "__main__":
    main()
