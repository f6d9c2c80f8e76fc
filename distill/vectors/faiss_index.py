"""FAISS indexes over L2-normalised vectors (search scores are cosines), and their word lists.

Where faiss's GPU build is installed (``pip install "distill[faiss-gpu]"``) and sees a GPU, exact (flat)
indexes are built and searched on it; files are always written as CPU indexes, so any build reads them.
``DISTILL_FAISS_GPU=0`` keeps everything on the CPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distill.choices import Choice
from distill.config import parse_choices
from distill.errors import ConfigError
from distill.files import atomic_path
from distill.vectors.keyed import l2_normalize


class IndexKind(Choice):
    """How neighbours are searched."""

    FLAT = "flat"  # exact
    HNSW = "hnsw"  # graph
    IVFPQ = "ivfpq"  # inverted lists + product quantization: compressed


_GPU_RESOURCES: list[Any] = []  # one set of faiss GPU resources per process, made on first use


def on_gpu(index: Any) -> Any:
    """A flat index moved to GPU 0 when faiss's GPU build sees a GPU (and ``DISTILL_FAISS_GPU`` is not 0);
    otherwise the index itself. Graph and compressed indexes stay on the CPU."""
    import faiss

    if os.environ.get("DISTILL_FAISS_GPU", "1") == "0" or not isinstance(index, faiss.IndexFlat):
        return index
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() < 1:
        return index
    if not _GPU_RESOURCES:
        _GPU_RESOURCES.append(faiss.StandardGpuResources())
    return faiss.index_cpu_to_gpu(_GPU_RESOURCES[0], 0, index)


def on_cpu(index: Any) -> Any:
    """The CPU copy of an index built by :func:`on_gpu` (the index itself when it is on the CPU)."""
    import faiss

    return faiss.index_gpu_to_cpu(index) if type(index).__name__.startswith("Gpu") else index


def build_faiss_index(vectors: np.ndarray, kind: IndexKind | str = IndexKind.FLAT, seed: int = 0) -> Any:
    """Inner-product index over L2-normalised vectors (search scores are cosines).

    ``flat``: exact. ``hnsw``: graph, 32 links per node, efSearch 64 (no training). ``ivfpq``: ~4 sqrt(n)
    inverted lists, product quantization to d/4 codes of up to 8 bits a vector (16x smaller than float32),
    16 lists probed (trained on the vectors themselves).
    """
    import faiss

    kind = parse_choices(IndexKind, [kind], "index kind", many=False)[0]
    unit = l2_normalize(vectors)
    n, d = unit.shape
    if kind is IndexKind.FLAT:
        index = on_gpu(faiss.IndexFlatIP(d))
    elif kind is IndexKind.HNSW:
        index = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
        index.hnsw.efSearch = 64
    else:
        if n < 256:
            raise ConfigError(f"an ivfpq index needs at least 256 vectors to train on, not {n}; use flat or hnsw")
        nlist = max(1, min(int(4 * np.sqrt(n)), n // 39))
        m = next(k for k in (d // 4, d // 2, d) if k >= 1 and d % k == 0)
        nbits = int(min(8, np.log2(n / 39)))  # faiss wants 39 training points per code centroid
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, nlist, m, nbits, faiss.METRIC_INNER_PRODUCT)
        faiss.ParameterSpace().set_index_parameter(index, "nprobe", min(16, nlist))
        index.cp.seed = seed
        index.pq.cp.seed = seed
        index.train(unit)
    index.add(unit)
    return index


def words_path(path: str | Path) -> Path:
    """The word list beside an index file: ``<path>.words.txt``."""
    path = Path(path)
    return path.with_name(path.name + ".words.txt")


def write_faiss(
    words: Sequence[str],
    vectors: np.ndarray,
    path: str | Path,
    kind: IndexKind | str = IndexKind.FLAT,
    index: Any = None,
) -> tuple[Path, Path]:
    """FAISS index file and its word list (``<path>.words.txt``, one word per line, row order); ``index``:
    one already built over ``vectors`` by :func:`build_faiss_index`, else it is built here."""
    import faiss

    path = Path(path)
    index = build_faiss_index(vectors, kind) if index is None else index
    with atomic_path(path) as tmp:
        faiss.write_index(on_cpu(index), str(tmp))
    with atomic_path(words_path(path)) as tmp:
        tmp.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    return path, words_path(path)


def read_faiss(path: str | Path) -> tuple[Any, list[str]]:
    """The index and its word list, as written by :func:`write_faiss`."""
    import faiss

    try:
        words = words_path(path).read_text(encoding="utf-8").splitlines()
        index = faiss.read_index(str(path))
    except (OSError, UnicodeDecodeError, RuntimeError) as err:
        raise ConfigError(f"cannot read the FAISS index {path} or its word list: damaged or truncated") from err
    return on_gpu(index), words
