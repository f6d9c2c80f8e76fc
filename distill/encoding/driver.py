"""The encoding pass of a run: sampled sentences -> occurrence store, checkpointed and resumable.

Picks the sentences (uniform or greedy sampling), opens the store in the work folder, and runs
the encoder locally or on Ray (``--engine ray``). Every ``checkpoint_every`` seconds, at a chunk
boundary, the store is flushed and its state saved; a run started again with the same options
reopens the store, walks the chunks already done without encoding them, and goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from distill.collector import heap_frozen
from distill.config import Engine, RunConfig, Sampling, StoreKind, token_budget
from distill.corpus import Vocabulary
from distill.encoders import Encoder
from distill.encoding.batches import EncodeStats
from distill.encoding.device_store import DeviceStore
from distill.encoding.local import encode_occurrences
from distill.encoding.store import OccurrenceStore, store_dtype, store_in_memory
from distill.names import store_file
from distill.occurrences import SamplePlan, SamplingStats, SentenceJob, iter_jobs, iter_jobs_greedy, shuffle_stream
from distill.parallel import Mapper, WorkerPool, in_process
from distill.workdir import WorkDir

logger = logging.getLogger(__name__)


@dataclass
class EncodePass:
    """What the pass produced: the filled store and its counts."""

    store: OccurrenceStore
    encode: EncodeStats
    sampling: dict[str, Any]
    resumed_chunks: int  # chunks a checkpoint had done (0: a fresh pass)
    batch_tokens: int | None  # padded tokens per batch on this device (None: batches of --batch-size)


def sentence_jobs(
    lines: Iterable[str],
    vocab: Vocabulary,
    plan: SamplePlan,
    config: RunConfig,
    stats: SamplingStats,
    mapper: Mapper = in_process,
) -> Iterator[SentenceJob]:
    """The sentences to encode, as ``config.sampling`` picks them; ``mapper`` finds the words of each block of
    lines (a worker pool's, or here)."""
    if config.sampling is Sampling.GREEDY:
        shuffled = shuffle_stream(lines, config.shuffle_buffer, config.seed)
        return iter_jobs_greedy(shuffled, vocab, plan, stats, mapper)
    return iter_jobs(lines, vocab, plan, stats, mapper)


def _observer_state(observers: Sequence[Any]) -> dict[str, np.ndarray]:
    return {f"observer{i}.{k}": v for i, o in enumerate(observers) for k, v in o.state().items()}


def _load_observer_state(observers: Sequence[Any], arrays: dict[str, np.ndarray]) -> None:
    for i, observer in enumerate(observers):
        prefix = f"observer{i}."
        observer.load_state({k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)})


class _Checkpoints:
    """Saves the pass's state every ``every`` seconds at a chunk boundary; at the end too once there has been
    one (a run shorter than that writes none: an in-memory store then never touches the disk)."""

    def __init__(self, work: WorkDir, store: OccurrenceStore, observers: Sequence[Any], every: float, saved: bool):
        self.work, self.store, self.observers, self.every = work, store, observers, every
        self.last, self.saved = time.monotonic(), saved

    def __call__(
        self, chunks_done: int, stats: EncodeStats, done: bool = False, sampling: dict[str, Any] | None = None
    ) -> None:
        if time.monotonic() - self.last < self.every and not (done and self.saved):
            return
        self.saved = True
        self.store.flush()
        meta = {"chunks_done": chunks_done, "encode": dataclasses.asdict(stats), "done": done, "sampling": sampling}
        self.work.save_checkpoint({**self.store.state(), **_observer_state(self.observers)}, meta)
        self.last = time.monotonic()


def _open_store(
    encoder: Encoder, plan: SamplePlan, layers: tuple[int, ...], config: RunConfig, work: WorkDir, reopen: bool
) -> OccurrenceStore:
    saved = work.occurrences / store_file(layers[0]) if reopen else None
    dtype = store_dtype(config.store_dtype.value, plan.n_rows, encoder.hidden_size, len(layers), saved)
    on_gpu = encoder.device.type == "cuda" and config.engine is Engine.LOCAL
    if config.store is StoreKind.DEVICE or (config.store is StoreKind.AUTO and on_gpu):
        return DeviceStore(work.occurrences, layers, plan.n_rows, encoder.hidden_size, dtype,
                           reopen=reopen, device=encoder.device)  # fmt: skip
    in_memory = store_in_memory(config.store.value, plan.n_rows, encoder.hidden_size, len(layers), dtype)
    return OccurrenceStore(
        work.occurrences, layers, plan.n_rows, encoder.hidden_size, dtype, reopen=reopen, in_memory=in_memory
    )


def store_kind(store: OccurrenceStore) -> str:
    """What ``--store`` the store is: device, memory or disk."""
    return "device" if isinstance(store, DeviceStore) else "memory" if store.in_memory else "disk"


def _run_engine(
    encoder: Encoder,
    jobs: Iterator[SentenceJob],
    layers: tuple[int, ...],
    store: OccurrenceStore,
    config: RunConfig,
    work: WorkDir,
    progress: tuple[int, EncodeStats, int],
    on_chunk: _Checkpoints,
    observers: Sequence[Any],
    pool: WorkerPool | None,
) -> EncodeStats:
    """Fill ``store`` on the chosen engine; ``progress``: (rows planned, stats so far, chunks done)."""
    total, stats, skip = progress
    if config.engine is Engine.RAY:
        from distill.encoding.ray_engine import encode_with_ray

        return encode_with_ray(encoder, jobs, layers, store, config, chunk_dir=work.chunks, total=total, stats=stats,
                               skip_chunks=skip, on_chunk=on_chunk, observers=observers)  # fmt: skip
    return encode_occurrences(
        encoder,
        jobs,
        layers,
        store,
        batch_size=config.batch_size,
        batch_tokens=config.batch_tokens,
        workers=config.tokenize_workers,
        pool=pool,
        stride=config.stride,
        chunk_size=config.chunk_size,
        total=total,
        progress=config.progress,
        observers=observers,
        stats=stats,
        skip_chunks=skip,
        on_chunk=on_chunk,
        context_share=config.context_share,
    )


def encode_pass(
    encoder: Encoder,
    lines: Iterable[str],
    vocab: Vocabulary,
    plan: SamplePlan,
    layers: tuple[int, ...],
    config: RunConfig,
    work: WorkDir,
    *,
    resume: bool,
    corpus_lines: int,
    observers: Sequence[Any] = (),
    pool: WorkerPool | None = None,
) -> EncodePass:
    """Fill the store for ``plan`` from ``lines``, going on from ``work``'s checkpoint when ``resume``; the
    ``pool``'s workers, when given, find the sampled sentences' words and tokenize them."""
    checkpoint = work.load_checkpoint() if resume else None
    store = _open_store(encoder, plan, layers, config, work, reopen=checkpoint is not None)
    stats, skip, sampling = EncodeStats(), 0, None
    if checkpoint is not None:
        arrays, meta = checkpoint
        store.load_state(arrays)
        _load_observer_state(observers, arrays)
        stats, skip = EncodeStats(**meta["encode"]), int(meta["chunks_done"])
        sampling = meta["sampling"] if meta["done"] else None
        logger.info("resuming from a checkpoint: %d chunks, %d occurrences done%s", skip, stats.occurrences,
                    "; the encoding pass was complete" if meta["done"] else "")  # fmt: skip
    if sampling is None:
        save = _Checkpoints(work, store, observers, config.checkpoint_every, saved=checkpoint is not None)
        sampling_stats = SamplingStats()
        jobs = sentence_jobs(lines, vocab, plan, config, sampling_stats, pool.map if pool else in_process)
        with heap_frozen():
            stats = _run_engine(encoder, jobs, layers, store, config, work, (plan.n_rows, stats, skip), save,
                                observers, pool)  # fmt: skip
        sampling = sampling_stats.to_json(config.sampling.value, corpus_lines)
        save(-(-sampling_stats.sentences_kept // config.chunk_size), stats, done=True, sampling=sampling)
        logger.info("sampling %s: %d of %d lines encoded (%.1f%% skipped)", config.sampling.value,
                    sampling_stats.sentences_kept, corpus_lines, 100 * sampling["share_skipped"])  # fmt: skip
    return EncodePass(store, stats, sampling, skip, token_budget(config.batch_tokens, encoder.device))
