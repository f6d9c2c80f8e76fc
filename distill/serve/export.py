"""``distill export``: one vector set of a run, made smaller if asked, in the formats services load."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distill.config import Pooling, parse_choices
from distill.files import check_writable
from distill.rundir import EXPORT_DIR, RunDir
from distill.serve.compress import DType, Scale, fit_pca, quantize
from distill.serve.compress import top_words as keep_top
from distill.serve.formats import Format, check_formats_available, size_on_disk, write_format


def parse_formats(spec: str | Sequence[str]) -> tuple[Format, ...]:
    """``"kv,npy"`` -> formats, in the order given."""
    return parse_choices(Format, spec, "format")


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
    check_formats_available(formats)
    run = RunDir(run_dir)
    manifest = run.manifest()
    layer = manifest["layers"][0] if layer is None else layer
    pooling = Pooling(parse_choices(Pooling, [pooling], "pooling", many=False)[0]).value
    dtype, scale = DType(dtype), Scale(scale)
    kv = run.load(run.set_for(layer, pooling))
    counts = run.counts(kv.index_to_key)
    words, vectors = keep_top(list(kv.index_to_key), kv.vectors, top_words)
    counts = counts[: len(words)] if counts is not None else None
    info: dict[str, Any] = {
        "run": str(run.path),
        "layer": layer,
        "pooling": pooling,
        "words": len(words),
        "dtype": dtype.value,
        "int8_scale": scale.value if dtype is DType.INT8 else None,
    }
    if dims is not None:
        pca = fit_pca(vectors, dims)
        vectors = pca.transform(vectors)
        info.update(dims=dims, pca_explained_variance=pca.explained_variance_ratio)
    q = quantize(vectors, dtype, scale)
    stem = f"layer{layer}.{pooling}" + (f".top{top_words}" if top_words else "") + (f".d{dims}" if dims else "")
    stem += "" if dtype is DType.FLOAT32 else f".{dtype.value}"
    out_dir = check_writable(out or run.path / EXPORT_DIR)
    pieces = None
    if Format.SENTENCE_TRANSFORMERS in formats and dims is None:
        from distill.serve.pieces import PieceVectors

        pieces = PieceVectors.open(run.path, layer)
    lowercase, source = bool(manifest["vocabulary"]["lowercase"]), str(manifest["model"]["source"])
    written = []
    for fmt in formats:
        for path in write_format(fmt, words, q, counts, out_dir, stem, lowercase, source, info, pieces):
            written.append((path, size_on_disk(path)))
    return written
