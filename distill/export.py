"""Write vectors where users load them: word2vec text/binary (gensim), a FAISS index, manifest.json.

Every file is written under a temporary name in its final folder and renamed when complete, so a
crash or a full disk never leaves a half-written output behind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import OutputError
from distill.floattext import format_lines


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` if the block succeeds."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if err.errno == errno.ENOSPC:
            raise OutputError(f"disk full while writing {path}; free some space or choose another --out") from err
        raise OutputError(f"cannot write {path}: {err.strerror or err}; choose another --out") from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_writable(directory: str | Path) -> Path:
    """Create ``directory`` and prove a file can be written there, before any slow work starts."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as err:
        raise OutputError(
            f"cannot write to the output folder {directory}: {err.strerror or err}; choose another --out"
        ) from err
    return directory


def to_keyed_vectors(words: Sequence[str], vectors: np.ndarray, counts: np.ndarray | None = None) -> Any:
    """gensim ``KeyedVectors`` holding ``vectors`` (n_words, dim) in the given word order.

    ``counts`` (corpus frequencies) become gensim's ``count`` attribute; gensim writes files sorted by it,
    so words must already be in descending count order.
    """
    from gensim.models import KeyedVectors

    if len(set(words)) != len(words):
        raise ValueError("duplicate words")
    kv = KeyedVectors(vector_size=vectors.shape[1], dtype=np.float32)
    # direct assignment: add_vectors checks key by key, 100x slower for a large vocabulary
    kv.index_to_key = list(words)
    kv.key_to_index = {w: i for i, w in enumerate(kv.index_to_key)}
    kv.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if counts is not None:
        if np.any(np.diff(counts) > 0):
            raise ValueError("words must be sorted by descending count")
        kv.allocate_vecattrs(["count"], [np.int64])
        kv.expandos["count"][:] = counts
    return kv


def write_word2vec(kv: Any, path: str | Path, binary: bool = False) -> Path:
    """word2vec text (``binary=False``) or binary file that ``KeyedVectors.load_word2vec_format`` reads.

    Binary files are gensim's own writer. Text files have gensim's layout, with values formatted by
    :func:`distill.floattext.format_lines` (9 significant digits: exact for float32), many times faster
    than gensim's per-value ``repr``.
    """
    with atomic_path(path) as tmp:
        if binary:
            kv.save_word2vec_format(str(tmp), binary=True, write_header=True)
        else:
            _write_word2vec_text(kv.index_to_key, kv.vectors, tmp)
    return Path(path)


def _write_word2vec_text(words: Sequence[str], vectors: np.ndarray, path: Path) -> None:
    with open(path, "wb") as handle:
        handle.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        handle.writelines(format_lines(words, vectors))


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    """The ``manifest.json`` of a run folder; ConfigError when the folder is not a run."""
    from distill.config import ConfigError

    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a distill run folder (no manifest.json)")
    return json.loads(path.read_text(encoding="utf-8"))


def read_vocab_counts(path: str | Path) -> dict[str, int]:
    """``word -> count`` from a ``vocab.tsv`` (as :func:`write_vocab` writes it), most frequent first."""
    rows = (line.split("\t") for line in Path(path).read_text(encoding="utf-8").splitlines())
    return {word: int(count) for word, count in rows}


def run_counts(run_dir: str | Path, words: Sequence[str]) -> np.ndarray | None:
    """Corpus counts of ``words`` from the run's ``vocab.tsv``; None for a run made before it was written."""
    path = Path(run_dir) / "vocab.tsv"
    if not path.is_file():
        return None
    table = read_vocab_counts(path)
    return np.array([table[w] for w in words], dtype=np.int64)


def write_vocab(words: Sequence[str], counts: np.ndarray, path: str | Path) -> Path:
    """``word<TAB>count`` per line, most frequent first: the run's vocabulary, for baselines trained on it."""
    with atomic_path(path) as tmp:
        tmp.write_text("".join(f"{w}\t{int(c)}\n" for w, c in zip(words, counts)), encoding="utf-8")
    return Path(path)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


INDEX_KINDS = ("flat", "hnsw", "ivfpq")


def build_faiss_index(vectors: np.ndarray, kind: str = "flat", seed: int = 0) -> Any:
    """Inner-product index over L2-normalised vectors (search scores are cosines).

    ``flat``: exact. ``hnsw``: graph, 32 links per node, efSearch 64 (no training). ``ivfpq``: ~4 sqrt(n)
    inverted lists, product quantization to d/4 codes of up to 8 bits a vector (16x smaller than float32),
    16 lists probed (trained on the vectors themselves).
    """
    import faiss

    unit = l2_normalize(vectors)
    n, d = unit.shape
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
        index.hnsw.efSearch = 64
    elif kind == "ivfpq":
        nlist = max(1, min(int(4 * np.sqrt(n)), n // 39))
        m = next(k for k in (d // 4, d // 2, d) if k >= 1 and d % k == 0)
        if n < 256:
            raise ValueError(f"an ivfpq index needs at least 256 vectors to train on, not {n}; use flat or hnsw")
        nbits = int(min(8, np.log2(n / 39)))  # faiss wants 39 training points per code centroid
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, nlist, m, nbits, faiss.METRIC_INNER_PRODUCT)
        faiss.ParameterSpace().set_index_parameter(index, "nprobe", min(16, nlist))
        index.cp.seed = seed
        index.pq.cp.seed = seed
        index.train(unit)
    else:
        raise ValueError(f"unknown index kind {kind!r}; use one of: {', '.join(INDEX_KINDS)}")
    index.add(unit)
    return index


def write_faiss(words: Sequence[str], vectors: np.ndarray, path: str | Path, kind: str = "flat") -> tuple[Path, Path]:
    """FAISS index file and its word list (``<path>.words.txt``, one word per line, row order)."""
    import faiss

    path = Path(path)
    index = build_faiss_index(vectors, kind)
    with atomic_path(path) as tmp:
        faiss.write_index(index, str(tmp))
    words_path = path.with_name(path.name + ".words.txt")
    with atomic_path(words_path) as tmp:
        tmp.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    return path, words_path


def read_faiss(path: str | Path) -> tuple[Any, list[str]]:
    """The index and its word list, as written by :func:`write_faiss`."""
    import faiss

    path = Path(path)
    words = path.with_name(path.name + ".words.txt").read_text(encoding="utf-8").splitlines()
    return faiss.read_index(str(path)), words


def write_json(data: dict[str, Any], path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    return Path(path)


def sha256_file(path: str | Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load(path: str | Path, layer: int | None = None, pooling: str = "pc") -> Any:
    """Load vectors as gensim ``KeyedVectors``: a ``.txt``/``.bin`` file, or a run folder and a layer.

    Needs only numpy and gensim (no torch), so a service can import it cheaply.
    """
    from gensim.models import KeyedVectors

    from distill.config import ConfigError, Pooling

    path = Path(path)
    if path.is_dir():
        if layer is None:
            layer = read_manifest(path)["layers"][0]
        path = path / f"layer{int(layer)}.{Pooling(pooling).value}.bin"
    if not path.is_file():
        raise ConfigError(f"no vector file at {path}")
    return KeyedVectors.load_word2vec_format(str(path), binary=path.suffix == ".bin")
