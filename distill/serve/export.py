"""``distill export``: one vector set of a run, made smaller if asked, in the formats services load."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import EXPORT_DTYPES, DType, check_dtype, parse_choices
from distill.errors import ConfigError
from distill.files import check_replaceable, check_writable, subfolder
from distill.names import EXPORT_DIR
from distill.rundir import RunDir, check_own_folder, words_per_line
from distill.serve.anyword import open_fallback
from distill.serve.card import card_text, reshaped, run_word_scores, teacher_hub_id
from distill.serve.compress import Pca, Scale, fit_pca, quantize
from distill.serve.compress import top_words as keep_top
from distill.serve.formats import (
    FOLDER_FORMATS,
    Format,
    check_formats_available,
    kv_side_file,
    size_on_disk,
    warn_unstored,
    write_format,
)
from distill.serve.weighting import SentenceRecipe, Weighting, apply_recipe


def parse_formats(spec: str | Sequence[str]) -> tuple[Format, ...]:
    """``"kv,npy"`` -> formats, in the order given."""
    return parse_choices(Format, spec, "format")


def sentence_recipe(manifest: dict[str, Any], name: str, weighting: Weighting | str) -> SentenceRecipe:
    """The recipe an export bakes in: ``auto`` is SIF over unit vectors (chosen on STS 2012-2014 by
    benchmarks/sentence_sweep.py), or nothing for a set already tuned for sentences."""
    if weighting == "auto":
        ready = manifest.get("derived", {}).get(name, {}).get("sentence_ready", False)
        return SentenceRecipe(Weighting.NONE, unit=False) if ready else SentenceRecipe(Weighting.SIF)
    try:
        chosen = Weighting(weighting)
    except ValueError as err:
        names = ", ".join(["auto", *(w.value for w in Weighting)])
        raise ConfigError(f"unknown weighting {weighting!r}; use one of: {names}") from err
    return SentenceRecipe(chosen, unit=chosen is not Weighting.NONE)


def prepared_set(
    run: RunDir, name: str, weighting: Weighting | str | SentenceRecipe = "auto"
) -> tuple[Any, np.ndarray | None, SentenceRecipe, np.ndarray]:
    """A set as its exports hold it: the vectors, their counts, the sentence recipe (``weighting``'s, or the
    recipe given) and the vectors with the recipe baked in (what ``distill evaluate`` scores a run folder's
    sentences with, and ``distill tune`` starts from)."""
    manifest = run.manifest()
    kv = run.load(name)
    counts = run.counts(kv.index_to_key, name)
    recipe = weighting if isinstance(weighting, SentenceRecipe) else sentence_recipe(manifest, name, weighting)
    return kv, counts, recipe, apply_recipe(kv.vectors, counts, recipe, words_per_line(manifest))


def set_pieces(run_dir: Path, name: str) -> Any:
    """The piece vectors the sentence exports of a run's set fall back to (its space, combined as the set
    combines its layers; letters the corpus never showed read alone); None when the run has none."""
    fallback = open_fallback(run_dir, name)
    if fallback is None:
        return None
    from distill.serve.alone import read_unseen_letters  # torch and the model, only for exports with pieces

    return read_unseen_letters(run_dir, name, fallback.piece_vectors())


def export_pieces(run_dir: Path, name: str, pca: Pca | None, left_out: Sequence[str], rows: np.ndarray) -> Any:
    """The piece vectors a sentence export of set ``name`` falls back to (None: the run has none): in the words'
    reduced space under ``pca``, and each word ``left_out`` (``--top-words``; ``rows``: their vectors) giving its
    row to its piece where the tokenizer reads it as one."""
    pieces = set_pieces(run_dir, name)
    if pieces is not None and pca is not None:
        has_vector = pieces.has_vector  # seen, or a letter read alone
        projected = np.zeros((len(pieces.vectors), pca.components.shape[0]), dtype=np.float32)
        projected[has_vector] = pca.transform(pieces.vectors[has_vector])
        pieces = dataclasses.replace(pieces, vectors=projected)
    return pieces.with_words(left_out, rows) if pieces is not None and len(left_out) else pieces


def export_run(
    run_dir: str | Path,
    *,
    vector_set: str | None = None,
    layer: int | None = None,
    pooling: str | None = None,
    formats: Sequence[Format] = (Format.NPY,),
    out: str | Path | None = None,
    dtype: DType | str = DType.FLOAT32,
    scale: Scale | str = Scale.VECTOR,
    dims: int | None = None,
    top_words: int | None = None,
    weighting: Weighting | str = "auto",
) -> list[tuple[Path, int]]:
    """Export one set of a run (by name, or a layer and pooling; by default the recommended set) in
    ``formats``; returns (path, bytes on disk) per output. With one format and an ``out`` folder, a folder
    format (model2vec, sentence-transformers, npy) is written as ``out`` itself, ready to load. ``weighting``
    is baked into the vectors for sentence means (``auto``: SIF, or none for a set tuned for sentences)."""
    check_formats_available(formats)
    itself = out is not None and len(formats) == 1 and formats[0] in FOLDER_FORMATS
    if itself:
        check_replaceable(Path(out), ConfigError, "export")  # type: ignore[arg-type]  # --out becomes the folder
    elif out is not None:  # a run's own set files, or an export's, would be replaced
        check_own_folder(Path(out), "exports")
    run = RunDir(run_dir)
    manifest = run.manifest()
    name = run.resolve_set(vector_set, layer, pooling)
    dtype = check_dtype(dtype, EXPORT_DTYPES, "--dtype")
    warn_unstored(formats, dtype)
    scale = parse_choices(Scale, [scale], "int8 scale", many=False)[0]
    kv, counts, recipe, prepared = prepared_set(run, name, weighting)
    pca = None
    if dims is not None:  # of the vectors as distilled, then the recipe: centring would undo the weights baked in;
        pca = fit_pca(kv.vectors, dims, center=recipe.unit)  # a set tuned for sentences (no recipe) keeps its mean
        prepared = apply_recipe(pca.transform(kv.vectors), counts, recipe, words_per_line(manifest))
    every = list(kv.index_to_key)
    words, vectors = keep_top(every, prepared, top_words)
    counts = counts[: len(words)] if counts is not None else None
    info: dict[str, Any] = {
        "run": str(run.path),
        "set": name,
        "sentence_recipe": recipe.to_json(),
        "words": len(words),
        "dtype": dtype.value,
        "int8_scale": scale.value if dtype is DType.INT8 else None,
    }
    if pca is not None:
        info.update(dims=dims, pca_explained_variance=pca.explained_variance_ratio)
    if top_words is not None:
        info.update(top_words=top_words)
    q = quantize(vectors, dtype, scale)  # before any file is written: vectors out of float16's range are refused
    stem = name + (f".top{top_words}" if top_words else "") + (f".d{dims}" if dims else "")
    stem += "" if dtype is DType.FLOAT32 else f".{dtype.value}"
    out_dir = check_writable(Path(out).parent if itself else out or subfolder(run.path, EXPORT_DIR))  # type: ignore[arg-type]
    sentences = {Format.SENTENCE_TRANSFORMERS, Format.MODEL2VEC} & set(formats)
    pieces = export_pieces(run.path, name, pca, every[len(words) :], prepared[len(words) :]) if sentences else None
    lowercase = bool(manifest["vocabulary"]["lowercase"])
    teacher = teacher_hub_id(manifest) or Path(str(manifest["model"]["source"])).name  # never a local path
    scores = run_word_scores(run.path, name)

    def card(fmt: Format, folder: Path) -> str:
        if reshaped(info):  # the run's scores are of the whole set
            note = f"Scores: `distill evaluate {folder.name} --benchmarks sts` scores this folder's sentences."
            return card_text(manifest, name, fmt.value, folder.name, (), [note], stored=info)
        return card_text(manifest, name, fmt.value, folder.name, scores, stored=info)

    written = []
    for fmt in formats:
        target = Path(out) if itself else None  # type: ignore[arg-type]
        paths = write_format(fmt, words, q, vectors, counts, out_dir, stem, lowercase, teacher, info, pieces, target,
                             card)  # fmt: skip
        written += [(path, size_on_disk(path)) for path in paths]
    made = [path for path, _ in written]  # into the run's folder, these go with its next run
    run.record_exports(made + [side for side in map(kv_side_file, made) if side.is_file()], name)
    return written
