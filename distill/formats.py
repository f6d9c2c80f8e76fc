"""Export vectors where services load them: gensim ``.kv``, model2vec, sentence-transformers, ``.npy`` + vocab.

Every format is written into a temporary folder or file next to its destination and renamed when
complete. ``read_npy`` reads the ``npy`` export back (dequantizing int8).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from distill.compress import DType, Quantized, Scale
from distill.config import ConfigError
from distill.export import (
    atomic_path,
    read_manifest,
    read_vocab_counts,
    run_counts,
    to_keyed_vectors,
    write_vocab,
    write_word2vec,
)

UNK = "[UNK]"


class Format(str, Enum):
    WORD2VEC = "word2vec"  # .txt and .bin
    KV = "kv"  # gensim native, memory-mappable
    MODEL2VEC = "model2vec"  # StaticModel.from_pretrained(folder)
    SENTENCE_TRANSFORMERS = "sentence-transformers"  # SentenceTransformer(folder)
    NPY = "npy"  # vectors.npy (+ scale.npy) + vocab.tsv


def _replace_dir(tmp: Path, final: Path) -> Path:
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def _tmp_dir(final: Path) -> Path:
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def word_tokenizer(words: Sequence[str], lowercase: bool) -> Any:
    """A ``tokenizers`` word-level tokenizer over ``words`` + ``[UNK]``: BERT's split on spaces and
    punctuation (as distill's ``\\w+`` words), lowercasing when the vocabulary is lowercased."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {w: i for i, w in enumerate(words)}
    vocab[UNK] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


def wordpiece_fallback(words: Sequence[str], values: np.ndarray, pieces: Any) -> tuple[Any, np.ndarray] | None:
    """For a WordPiece model with piece vectors: the model's own tokenizer with a vocabulary of our words
    plus the model's pieces, so a known word is one token (its static vector) and any other word splits into
    pieces (their static vectors scaled to the words' median norm; zero for a piece never seen, which then
    adds nothing to the direction). None for other tokenizers."""
    from tokenizers import Tokenizer

    spec = json.loads(pieces.tokenizer.backend_tokenizer.to_str())
    if spec["model"]["type"] != "WordPiece":
        return None
    vocab = {w: i for i, w in enumerate(words)}
    extra = [t for t in spec["model"]["vocab"] if t not in vocab]  # unseen pieces keep zero vectors
    piece_rows = pieces.vectors[[spec["model"]["vocab"][t] for t in extra]].astype(np.float32)
    norms = np.linalg.norm(piece_rows, axis=1, keepdims=True)
    piece_rows *= np.median(np.linalg.norm(values, axis=1)) / np.where(norms == 0, 1.0, norms)
    for t in [*extra, UNK]:
        vocab[t] = len(vocab)
    spec["model"]["vocab"] = vocab
    spec["model"]["unk_token"] = UNK
    spec["post_processor"] = None
    rows = np.vstack([values, piece_rows, np.zeros((1, values.shape[1]), dtype=np.float32)])
    return Tokenizer.from_str(json.dumps(spec)), rows


def write_kv(words: Sequence[str], q: Quantized, counts: np.ndarray | None, path: Path) -> Path:
    """gensim ``KeyedVectors.save``: load with ``KeyedVectors.load(path, mmap="r")``. int8 is stored dequantized."""
    values = q.values if q.scale is None else q.dequantize()
    kv = to_keyed_vectors(list(words), values.astype(np.float32), counts)
    kv.vectors = values if q.scale is None else kv.vectors  # keep float16 as float16
    with atomic_path(path) as tmp:
        kv.save(str(tmp))
        side = Path(str(tmp) + ".vectors.npy")  # gensim writes big arrays beside the pickle
        if side.exists():
            os.replace(side, str(path) + ".vectors.npy")
    return path


def write_model2vec(words: Sequence[str], q: Quantized, lowercase: bool, path: Path, base_model: str) -> Path:
    """A model2vec ``StaticModel`` folder; int8 with one scale per vector is stored as int8 + per-token weights."""
    from model2vec import StaticModel

    if q.scale is not None and q.scale.shape[0] == 1 and q.values.shape[0] > 1:
        raise ConfigError("model2vec keeps one weight per token: export int8 with --int8-scale vector")
    values = np.vstack([q.values, np.zeros((1, q.values.shape[1]), dtype=q.values.dtype)])  # [UNK] row
    weights = None if q.scale is None else np.append(q.scale[:, 0], 0.0).astype(np.float32)
    model = StaticModel(
        values,
        word_tokenizer(words, lowercase),
        normalize=False,
        base_model_name=base_model,
        weights=weights,
        max_length=None,
    )
    tmp = _tmp_dir(path)
    model.save_pretrained(tmp)
    return _replace_dir(tmp, path)


def write_sentence_transformers(
    words: Sequence[str], q: Quantized, lowercase: bool, path: Path, pieces: Any = None
) -> Path:
    """A ``SentenceTransformer`` folder with one ``StaticEmbedding`` (mean of word vectors). With piece vectors
    of a WordPiece model, unknown words get their pieces' vectors; otherwise they add nothing to the
    direction. Stored as float32: ``EmbeddingBag`` has no int8."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    fallback = wordpiece_fallback(words, q.dequantize(), pieces) if pieces is not None else None
    if fallback is None:
        tokenizer = word_tokenizer(words, lowercase)
        values = np.vstack([q.dequantize(), np.zeros((1, q.values.shape[1]), dtype=np.float32)])
    else:
        tokenizer, values = fallback
    module = StaticEmbedding(tokenizer, embedding_weights=values)
    tmp = _tmp_dir(path)
    SentenceTransformer(modules=[module], device="cpu").save(str(tmp))
    return _replace_dir(tmp, path)


def write_npy(words: Sequence[str], q: Quantized, counts: np.ndarray | None, path: Path, info: dict[str, Any]) -> Path:
    """``vectors.npy`` (as stored), ``scale.npy`` (int8), ``vocab.tsv`` (word, count) and ``export.json``."""
    tmp = _tmp_dir(path)
    np.save(tmp / "vectors.npy", q.values)
    if q.scale is not None:
        np.save(tmp / "scale.npy", q.scale)
    write_vocab(words, counts if counts is not None else np.zeros(len(words), dtype=np.int64), tmp / "vocab.tsv")
    (tmp / "export.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return _replace_dir(tmp, path)


def read_npy(path: str | Path) -> Any:
    """The ``npy`` export as float32 gensim ``KeyedVectors`` (int8 dequantized)."""
    path = Path(path)
    if not (path / "vectors.npy").is_file():
        raise ConfigError(f"{path} is not an npy export (no vectors.npy)")
    values = np.load(path / "vectors.npy")
    scale = np.load(path / "scale.npy") if (path / "scale.npy").is_file() else None
    table = read_vocab_counts(path / "vocab.tsv")
    vectors = Quantized(values, scale).dequantize()
    return to_keyed_vectors(list(table), vectors, np.array(list(table.values())))


def write_format(
    fmt: Format,
    words: Sequence[str],
    q: Quantized,
    counts: np.ndarray | None,
    out: Path,
    stem: str,
    lowercase: bool,
    base_model: str,
    info: dict[str, Any],
    pieces: Any = None,
) -> list[Path]:
    """Write one format; returns the paths written (``pieces``: OOV fallback of the sentence-transformers export)."""
    if fmt is Format.WORD2VEC:
        kv = to_keyed_vectors(list(words), q.dequantize(), counts)
        return [write_word2vec(kv, out / f"{stem}.txt"), write_word2vec(kv, out / f"{stem}.bin", binary=True)]
    if fmt is Format.KV:
        return [write_kv(words, q, counts, out / f"{stem}.kv")]
    if fmt is Format.MODEL2VEC:
        return [write_model2vec(words, q, lowercase, out / f"{stem}.model2vec", base_model)]
    if fmt is Format.SENTENCE_TRANSFORMERS:
        return [write_sentence_transformers(words, q, lowercase, out / f"{stem}.st", pieces)]
    return [write_npy(words, q, counts, out / f"{stem}.npy", info)]


def size_on_disk(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    extra = Path(str(path) + ".vectors.npy")
    return path.stat().st_size + (extra.stat().st_size if extra.exists() else 0)


def parse_formats(text: str) -> tuple[Format, ...]:
    allowed = [f.value for f in Format]
    out = []
    for item in (t.strip() for t in text.split(",")):
        if item not in allowed:
            raise ConfigError(f"unknown format {item!r}; use one or more of: {', '.join(allowed)}")
        out.append(Format(item))
    return tuple(dict.fromkeys(out))


def export_run(
    run_dir: str | Path,
    *,
    layer: int | None = None,
    pooling: str = "pc",
    formats: Sequence[Format] = (Format.NPY,),
    out: str | Path | None = None,
    dtype: DType | str = DType.FLOAT32,
    scale: Scale | str = Scale.VECTOR,
    dims: int | None = None,
    top_words: int | None = None,
) -> list[tuple[Path, int]]:
    """Export one layer and pooling of a run in ``formats``; returns (path, bytes on disk) per output."""
    from distill.compress import fit_pca, quantize
    from distill.compress import top_words as keep_top
    from distill.export import check_writable, load

    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    layer = manifest["layers"][0] if layer is None else layer
    kv = load(run_dir, layer=layer, pooling=pooling)
    counts = run_counts(run_dir, kv.index_to_key)
    words, vectors = keep_top(list(kv.index_to_key), kv.vectors, top_words)
    counts = counts[: len(words)] if counts is not None else None
    info: dict[str, Any] = {
        "run": str(run_dir),
        "layer": layer,
        "pooling": pooling,
        "words": len(words),
        "dtype": DType(dtype).value,
        "int8_scale": Scale(scale).value if DType(dtype) is DType.INT8 else None,
    }
    if dims is not None:
        pca = fit_pca(vectors, dims)
        vectors = pca.transform(vectors)
        info.update(dims=dims, pca_explained_variance=pca.explained_variance_ratio)
    q = quantize(vectors, dtype, scale)
    stem = f"layer{layer}.{pooling}" + (f".top{top_words}" if top_words else "") + (f".d{dims}" if dims else "")
    stem += "" if DType(dtype) is DType.FLOAT32 else f".{DType(dtype).value}"
    out_dir = check_writable(out or run_dir / "export")
    pieces = None
    if Format.SENTENCE_TRANSFORMERS in formats and dims is None:
        from distill.pieces import PieceVectors

        pieces = PieceVectors.open(run_dir, layer)
    written = []
    for fmt in formats:
        for path in write_format(
            fmt,
            words,
            q,
            counts,
            out_dir,
            stem,
            bool(manifest["vocabulary"]["lowercase"]),
            str(manifest["model"]["source"]),
            info,
            pieces,
        ):
            written.append((path, size_on_disk(path)))
    return written


__all__ = ["DType", "Format", "Scale", "export_run", "read_npy", "write_format"]
