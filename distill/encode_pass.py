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

from distill.checkpoint import WorkDir
from distill.config import RunConfig
from distill.corpus import Vocabulary
from distill.encoder import EncodeStats, LoadedModel, encode_occurrences
from distill.occurrences import SamplePlan, SamplingStats, SentenceJob, iter_jobs, iter_jobs_greedy, shuffle_stream
from distill.store import OccurrenceStore, store_dtype, store_in_memory

logger = logging.getLogger(__name__)


@dataclass
class EncodePass:
    """What the pass produced: the filled store and its counts."""

    store: OccurrenceStore
    encode: EncodeStats
    sampling: dict[str, Any]
    resumed_chunks: int  # chunks a checkpoint had done (0: a fresh pass)


def sentence_jobs(
    lines: Iterable[str], vocab: Vocabulary, plan: SamplePlan, config: RunConfig, stats: SamplingStats
) -> Iterator[SentenceJob]:
    """The sentences to encode, as ``config.sampling`` picks them."""
    if config.sampling == "greedy":
        return iter_jobs_greedy(shuffle_stream(lines, config.shuffle_buffer, config.seed), vocab, plan, stats)
    return iter_jobs(lines, vocab, plan, stats)


def _observer_state(observers: Sequence[Any]) -> dict[str, np.ndarray]:
    return {f"observer{i}.{k}": v for i, o in enumerate(observers) for k, v in o.state().items()}


def _load_observer_state(observers: Sequence[Any], arrays: dict[str, np.ndarray]) -> None:
    for i, observer in enumerate(observers):
        prefix = f"observer{i}."
        observer.load_state({k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)})


def encode_pass(
    model: LoadedModel,
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
) -> EncodePass:
    """Fill the store for ``plan`` from ``lines``, going on from ``work``'s checkpoint when ``resume``."""
    dtype = store_dtype(config.store_dtype, plan.n_rows, model.hidden_size, len(layers))
    in_memory = store_in_memory(config.store, plan.n_rows, model.hidden_size, len(layers), dtype)
    checkpoint = work.load_checkpoint() if resume else None
    store = OccurrenceStore(
        work.path / "occurrences",
        layers,
        plan.n_rows,
        model.hidden_size,
        dtype,
        reopen=checkpoint is not None,
        in_memory=in_memory,
    )
    stats, skip = EncodeStats(), 0
    if checkpoint is not None:
        arrays, meta = checkpoint
        store.load_state(arrays)
        _load_observer_state(observers, arrays)
        stats, skip = EncodeStats(**meta["encode"]), int(meta["chunks_done"])
        if meta["done"]:
            logger.info("resuming: the encoding pass was complete (%d occurrences)", stats.occurrences)
            return EncodePass(store, stats, meta["sampling"], skip)
        logger.info("resuming from a checkpoint: %d chunks, %d occurrences done", skip, stats.occurrences)

    last, saved = time.monotonic(), checkpoint is not None

    def save(chunks_done: int, stats: EncodeStats, done: bool = False, sampling: dict[str, Any] | None = None) -> None:
        """A checkpoint every ``checkpoint_every`` seconds; at the end too once there has been one (a run
        shorter than that writes no checkpoint: an in-memory store then never touches the disk)."""
        nonlocal last, saved
        if time.monotonic() - last < config.checkpoint_every and not (done and saved):
            return
        saved = True
        store.flush()
        meta = {"chunks_done": chunks_done, "encode": dataclasses.asdict(stats), "done": done, "sampling": sampling}
        work.save_checkpoint({**store.state(), **_observer_state(observers)}, meta)
        last = time.monotonic()

    sampling_stats = SamplingStats()
    jobs = sentence_jobs(lines, vocab, plan, config, sampling_stats)
    if config.engine == "ray":
        from distill.ray_engine import encode_with_ray

        stats = encode_with_ray(
            model,
            jobs,
            layers,
            store,
            config,
            work=work.path,
            total=plan.n_rows,
            stats=stats,
            skip_chunks=skip,
            on_chunk=save,
            observers=observers,
        )
    else:
        stats = encode_occurrences(
            model,
            jobs,
            layers,
            store,
            batch_size=config.batch_size,
            stride=config.stride,
            chunk_size=config.chunk_size,
            total=plan.n_rows,
            progress=config.progress,
            observers=observers,
            stats=stats,
            skip_chunks=skip,
            on_chunk=save,
        )
    method = config.sampling
    sampling = sampling_stats.to_json(method, corpus_lines)
    n_chunks = -(-sampling_stats.sentences_kept // config.chunk_size)
    save(n_chunks, stats, done=True, sampling=sampling)
    skipped = sampling["share_skipped"]
    logger.info("sampling %s: %d of %d lines encoded (%.1f%% skipped)", method, sampling_stats.sentences_kept,
                corpus_lines, 100 * skipped)  # fmt: skip
    return EncodePass(store, stats, sampling, skip)
