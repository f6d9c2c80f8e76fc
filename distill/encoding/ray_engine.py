"""``--engine ray``: the encoding pass on Ray Data, one encoder actor per GPU (or per CPU worker).

The driver walks the corpus as the local engine does and writes each chunk of sampled sentences
to ``<work>/chunks/`` (the corpus is never held in memory). A Ray dataset of chunk paths goes
through ``map_batches`` with a pool of actors, each holding the model; an actor encodes one chunk
exactly as the local engine would (same windows, same length-sorted batches) and returns the
chunk's occurrence vectors. Results come back in chunk order and the driver writes them to the
store, so the store, the checkpoints and the vectors are those of a local run.

Multi-node: start the cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379``
on the others), set ``RAY_ADDRESS=HEAD:6379``, and give ``--out`` on a filesystem that every
node mounts (the actors read the chunk files from there).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import RunConfig
from distill.encoders import Encoder
from distill.encoding.batches import EncodeStats, MergingObserver
from distill.encoding.store import OccurrenceStore
from distill.errors import ConfigError
from distill.iterate import batched
from distill.occurrences import SentenceJob
from distill.progress import progress_bar

logger = logging.getLogger(__name__)


class ChunkEncoder:
    """A Ray Data actor: loads the model once, then encodes chunk files into occurrence vectors."""

    def __init__(self, spec: dict[str, Any]) -> None:
        import torch

        from distill.encoders import load_encoder, load_encoder_config

        self.spec = spec
        torch.set_num_threads(max(1, int(spec["threads"])))
        config = load_encoder_config(spec["name"], spec["source"], spec["revision"], spec["gguf_file"])
        device = "cuda" if torch.cuda.is_available() and spec["device"] in ("auto", "cuda") else spec["device"]
        self.model = load_encoder(
            spec["name"],
            spec["source"],
            tuple(spec["layers"]),
            device="cpu" if device == "auto" else device,
            dtype=spec["dtype"],
            max_length=spec["max_length"],
            revision=spec["revision"],
            gguf_file=spec["gguf_file"],
            config=config,
        )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = [self.encode(str(path)) for path in batch["path"]]
        return {"index": np.asarray(batch["index"]), "result": np.array(results, dtype=object)}

    def encode(self, path: str) -> bytes:
        """One chunk, as :func:`distill.encoder.encode_occurrences` runs it; returns the pickled result."""
        import torch

        from distill.config import token_budget
        from distill.encoding.batches import ChunkDone, encode_batch, iter_batches

        with open(path, "rb") as handle:
            jobs: list[SentenceJob] = pickle.load(handle)
        layers = tuple(self.spec["layers"])
        stats = EncodeStats()
        observers = [observer.empty() for observer in self.spec["observers"]]
        rows, vectors = [], []
        budget = token_budget(self.spec["batch_tokens"], self.model.device)
        batches = iter_batches(self.model, jobs, batch_size=self.spec["batch_size"], stride=self.spec["stride"],
                               chunk_size=len(jobs), batch_tokens=budget)  # fmt: skip
        with torch.inference_mode():
            for batch in batches:
                if isinstance(batch, ChunkDone):
                    stats.add(batch.counts)
                    continue
                r, v = encode_batch(
                    self.model, layers, batch, stats, observers, context_share=self.spec["context_share"]
                )
                rows.append(r)
                vectors.append(v.cpu().numpy().astype(self.spec["store_dtype"]))
        empty = np.zeros((len(layers), 0, self.model.hidden_size), dtype=self.spec["store_dtype"])
        result = {
            "rows": np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64),
            "vectors": np.concatenate(vectors, axis=1) if vectors else empty,
            "stats": dataclasses.asdict(stats),
            "observers": [observer.state() for observer in observers],
        }
        return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def _start_ray(workers: int) -> bool:
    """Connect to ``RAY_ADDRESS`` or start a local cluster; True when this call started it."""
    try:
        import ray
    except ImportError as err:
        raise ConfigError("--engine ray needs Ray Data: pip install 'distill[ray]' (or ray[data])") from err
    if ray.is_initialized():
        return False
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    else:
        ray.init(
            num_cpus=max(os.cpu_count() or 1, workers),
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    return True


def _write_chunks(jobs: Iterable[SentenceJob], chunk_dir: Path, chunk_size: int, skip: int) -> list[dict[str, Any]]:
    """The corpus walk, streamed to one file per chunk of sampled sentences (those after ``skip``)."""
    chunk_dir.mkdir(exist_ok=True)
    items = []
    for index, chunk in enumerate(batched(jobs, chunk_size)):
        if index < skip:
            continue
        path = chunk_dir / f"{index:08d}.pkl"
        with open(path, "wb") as handle:
            pickle.dump(chunk, handle, protocol=pickle.HIGHEST_PROTOCOL)
        items.append({"index": index, "path": str(path)})
    return items


def encode_with_ray(
    model: Encoder,
    jobs: Iterable[SentenceJob],
    layers: tuple[int, ...],
    store: OccurrenceStore,
    config: RunConfig,
    *,
    chunk_dir: Path,
    total: int,
    stats: EncodeStats,
    skip_chunks: int,
    on_chunk: Callable[[int, EncodeStats], None],
    observers: Sequence[MergingObserver] = (),
) -> EncodeStats:
    """Fill ``store`` from ``jobs`` with Ray Data actors; ``on_chunk`` after each chunk, in chunk order.
    ``chunk_dir``: the folder of the chunk files. Each actor fills empty copies of ``observers``, merged back here."""
    started_here = _start_ray(config.workers or 1)
    import ray

    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = config.workers or (gpus or max(1, cpus // 2))
        items = _write_chunks(jobs, chunk_dir, config.chunk_size, skip_chunks)
        logger.info("ray: %d chunks on %d actors (%d GPUs, %d CPUs in the cluster)", len(items), workers, gpus, cpus)
        spec = {
            "name": config.model,
            "source": model.source,
            "layers": list(layers),
            "device": config.device,
            "dtype": config.dtype,
            "max_length": model.max_length,
            "revision": config.revision,
            "gguf_file": config.gguf_file,
            "batch_size": config.batch_size,
            "batch_tokens": config.batch_tokens,
            "stride": config.stride,
            "context_share": config.context_share,
            "store_dtype": store.dtype.name,
            "observers": [observer.empty() for observer in observers],
            "threads": 1 if gpus else max(1, cpus // workers),
        }
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # chunks come back in order: checkpoints stay valid
        context.enable_progress_bars = False
        resources = {"num_gpus": 1} if gpus else {"num_cpus": spec["threads"]}
        dataset = ray.data.from_items(items, override_num_blocks=max(1, len(items))).map_batches(
            ChunkEncoder,
            fn_constructor_kwargs={"spec": spec},
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=workers),
            **resources,
        )
        bar = progress_bar(total, f"encoding (ray, {workers} actors)", "occ", not config.progress, stats.occurrences)
        start = time.perf_counter() - stats.seconds
        for batch in dataset.iter_batches(batch_size=1, batch_format="numpy"):
            result = pickle.loads(batch["result"][0])
            store.write(result["rows"], result["vectors"])
            for key, value in result["stats"].items():
                if key != "seconds":
                    setattr(stats, key, getattr(stats, key) + value)
            for observer, state in zip(observers, result["observers"]):
                observer.merge(state)
            bar.update(len(result["rows"]))
            Path(chunk_dir / f"{int(batch['index'][0]):08d}.pkl").unlink(missing_ok=True)
            stats.seconds = time.perf_counter() - start
            on_chunk(int(batch["index"][0]) + 1, stats)
            stats.seconds = time.perf_counter() - start
        bar.close()
        return stats
    finally:
        if started_here:
            ray.shutdown()
