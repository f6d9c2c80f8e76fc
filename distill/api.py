"""The Python API: ``distill.run``, ``distill.load``, ``distill.derive``, ``distill.export`` and
``distill.evaluate``, each the command of the same name with typed arguments.

Heavy libraries (torch, transformers) load on first use, inside each function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from distill.config import (
    DEFAULT_MODEL,
    AlonePool,
    DType,
    EncodingErrors,
    Engine,
    Layers,
    Oov,
    Pooling,
    RunConfig,
    Sampling,
    SetFormat,
    StoreKind,
    Template,
)
from distill.errors import ConfigError

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

    from distill.evaluation.report import Row
    from distill.pipeline import RunResult
    from distill.serve.formats import Format


def run(
    *,
    model: str = DEFAULT_MODEL,
    corpus: str | Path | Sequence[str | Path] = (),
    out: str | Path | None = None,
    layers: str | int | Sequence[int] | Layers = "1",
    pooling: str | Sequence[str | Pooling] = "pc",
    formats: str | Sequence[str | SetFormat] = "txt,bin,faiss",
    min_count: int = 5,
    max_vocab: int | None = None,
    vocab_file: str | None = None,
    lowercase: bool | None = None,
    alpha_only: bool = True,
    split_sentences: bool = False,
    encoding_errors: EncodingErrors | str = "strict",
    max_occurrences: int = 200,
    seed: int = 0,
    sampling: Sampling | str = "uniform",
    shuffle_buffer: int = 100000,
    batch_size: int = 64,
    batch_tokens: int | None = None,
    max_length: int | None = None,
    stride: int = 32,
    context_share: float = 0.0,
    device: str = "auto",
    dtype: DType | str = "auto",
    gguf_file: str | None = None,
    revision: str | None = None,
    normalize: bool = False,
    model_words: bool = False,
    best: bool = False,
    best_layers: str | Sequence[int] | Layers | None = None,
    alone_weight: float = 0.0,
    language_words: int = 0,
    alone_template: str | Template | None = None,
    alone_pool: AlonePool | str = AlonePool.PIECES,
    analyze: bool = False,
    pieces: bool | None = None,
    teacher: bool = False,
    teacher_bags: int = 0,
    teacher_texts: str | Path | None = None,
    bag_topics: float = 0.0,
    tune_blend: float | None = None,
    store_dtype: DType | str = "auto",
    store: StoreKind | str = "auto",
    chunk_size: int = 4096,
    checkpoint_every: float = 300.0,
    resume: bool = True,
    engine: Engine | str = "local",
    tokenize_workers: int | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> RunResult:
    """Distil static word vectors, as ``distill run`` does; returns them with the run's manifest.

    ``distill.run(model="minilm", layers="1,6", pooling="pc,mean", corpus="my_corpus.txt", out="outputs/mine")``.
    Each keyword is the ``distill run`` option of that name (dashes as underscores), with its default; the
    arguments below are those options' help. Bad options raise :class:`distill.ConfigError` before any
    model loads.
    """
    from distill.pipeline import run_pipeline

    options = dict(locals())
    options.pop("run_pipeline")
    corpus = options["corpus"]
    options["corpus"] = tuple(map(str, _paths(corpus)))
    options["out"] = None if out is None else str(out)
    options["teacher_texts"] = None if teacher_texts is None else str(teacher_texts)
    return run_pipeline(RunConfig(**options))


def _paths(value: str | Path | Sequence[str | Path]) -> list[str | Path]:
    """One path, or several."""
    return [value] if isinstance(value, (str, Path)) else list(value)


def _names(value: str | Sequence[str]) -> list[str]:
    """Choices given as on the command line (``"npy,kv"``) or as a sequence (of strings or enum members)."""
    items = [value] if isinstance(value, str) else list(value)
    return [part.strip() for item in items for part in str(getattr(item, "value", item)).split(",") if part.strip()]


def _document_options() -> None:
    """``run``'s argument docs, from the one place each option's help lives (RunConfig)."""
    lines = ["", "    Args:"]
    for f in dataclasses.fields(RunConfig):
        lines.append(f"        {f.name}: {f.metadata['help']}")
    run.__doc__ = (run.__doc__ or "") + "\n".join(lines) + "\n"


_document_options()


def load(
    path: str | Path,
    layer: int | None = None,
    pooling: Pooling | str | None = None,
    vector_set: str | None = None,
    oov: Oov | str = Oov.PIECES,
) -> KeyedVectors:
    """Vectors as gensim ``KeyedVectors``; a run folder's set answers any word.

    Args:
        path: a word2vec ``.txt``/``.bin`` file (or GloVe text), or a run folder.
        layer: a run folder's layer set (default: the recommended set, else the first layer's).
        pooling: with ``layer``: ``pc`` or ``mean`` (default: the run's first pooling).
        vector_set: a set by name (``layers4-6.mean``), or ``best`` for the recommended one.
        oov: a run folder's words outside the vocabulary: ``pieces`` (the mean of their pieces' vectors, for
            runs made with them) or ``alone`` (the run's model reads the word alone; loads the model).
    """
    from distill.serve.anyword import load as load_any

    kv: KeyedVectors = load_any(path, layer, getattr(pooling, "value", pooling), vector_set, oov)
    return kv


def derive(
    run_dir: str | Path,
    layers: Layers | str | int | Sequence[int] = "1",
    pooling: str = "pc",
    combine: str = "mean",
    remove_top: int | None = None,
    whiten: bool = False,
    alone: float = 0.0,
    language_words: int = 0,
    alone_template: str | Template | None = None,
    alone_pool: AlonePool | str = AlonePool.PIECES,
    progress: bool = True,
) -> tuple[str, KeyedVectors]:
    """Derive a set from a run's layer sets and write it into the run folder, as ``distill derive``; returns its
    name (``layers4-6.mean``) and its vectors.

    Args:
        run_dir: a finished run folder.
        layers: the layer sets combined: ``1``, ``1,3``, ``4-6`` or ``all``.
        pooling: ``pc``, ``mean`` or ``pc+mean`` (each word's unit first-PC and unit mean vectors summed).
        combine: how the layers' unit vectors combine: ``mean`` or ``concat``.
        remove_top: None leaves the vectors as they are; 0 centres them; D also removes the top D directions.
        whiten: whiten the vectors (after ``remove_top``).
        alone: add this weight times each word's unit reading alone by the run's model (loads the model).
        language_words: also add the words the set lacks among the N most frequent of English (wordfreq), each
            read alone by the run's model, as ``distill run --language-words`` does; 0: none.
        alone_template: the prompt those words are read alone in (a name of ``distill.config.TEMPLATES`` or text
            holding ``{word}`` once); None: the run's own. Another prompt is named in the set's name.
        alone_pool: what ``alone`` adds: ``pieces``, the reading of the word's own pieces, or ``both``, the sum of
            that and the whole prompt's reading (a word the set lacks keeps its pieces' reading as its vector).
        progress: a bar while many words are read alone.
    """
    from distill.derived import Recipe
    from distill.derived import derive as derive_set

    prompt = None if alone_template is None else Template.parse(alone_template)
    recipe = Recipe(Layers.parse(layers), pooling, combine, remove_top, whiten, alone, language_words, prompt,  # type: ignore[arg-type]
                    alone_pool)  # type: ignore[arg-type]  # fmt: skip
    name, kv = derive_set(run_dir, recipe, progress)
    return name, kv


def export(
    run_dir: str | Path,
    formats: str | Sequence[Format | str] = "npy",
    *,
    vector_set: str | None = None,
    layer: int | None = None,
    pooling: Pooling | str | None = None,
    out: str | Path | None = None,
    dtype: DType | str = DType.FLOAT32,
    scale: str = "vector",
    dims: int | None = None,
    top_words: int | None = None,
    weighting: str = "auto",
) -> list[tuple[Path, int]]:
    """Export one set of a run, as ``distill export``; returns each output's path and bytes on disk.

    Args:
        run_dir: a finished run folder.
        formats: ``word2vec``, ``kv`` (gensim), ``model2vec``, ``sentence-transformers``, ``npy``, ``projector``:
            one, a comma-separated list or a sequence.
        vector_set: the set by name (default: the recommended set, else the first layer's); or ``layer`` and
            ``pooling``.
        layer: a layer set of the run.
        pooling: with ``layer``: ``pc`` or ``mean``.
        out: the folder written (default: the run's ``export/``); with one folder format, that folder itself.
        dtype: numbers stored: ``float32``, ``float16`` or ``int8`` (with a float32 scale).
        scale: int8 scale per ``vector``, per ``dimension`` or for the whole ``table`` (a model2vec folder
            always keeps model2vec's own int8: one scale for its table).
        dims: PCA of the vocabulary to this many dimensions.
        top_words: keep only the N most frequent words.
        weighting: the sentence models' word weights: ``auto`` (the set's own for a tuned set, else SIF),
            ``sif``, ``usif``, ``zipf`` or ``none``.
    """
    from distill.serve.export import export_run, parse_formats

    chosen = parse_formats(",".join(_names(formats)))
    pooled = getattr(pooling, "value", pooling)  # checked by the run folder (RunDir.set_for)
    return export_run(run_dir, vector_set=vector_set, layer=layer, pooling=pooled, formats=chosen, out=out,
                      dtype=dtype, scale=scale, dims=dims, top_words=top_words, weighting=weighting)  # fmt: skip


def evaluate(
    vectors: str | Path | Sequence[str | Path],
    *,
    baselines: str | Path | Sequence[str | Path] = (),
    vector_set: str | None = None,
    benchmarks: str | Sequence[str] | None = None,
    oov: str | Sequence[Oov | str] = (Oov.STANDARD, Oov.PIECES),
    seed: int = 0,
    progress: bool = False,
) -> list[Row]:
    """Score word vectors on the word benchmarks, as ``distill evaluate`` does (without writing a report).

    Args:
        vectors: a vector file (word2vec ``.txt``/``.bin``, GloVe text, ``.gz``) or run folder (every set), or
            several.
        baselines: vector files scored beside them, marked as baselines.
        vector_set: for run folders: this set only (``best``, ``layer1.pc`` ...).
        benchmarks: benchmark names, a sequence or comma-separated (default: every word benchmark the data
            folder holds).
        oov: OOV policies, a sequence or comma-separated: ``standard``, ``paper``, ``pieces``, ``alone``.
        seed: seed of the clustering (categorization).
        progress: show a progress bar.
    """
    from distill.config import parse_choices
    from distill.evaluation.report import EvalOptions, evaluate_rows
    from distill.evaluation.vectors import expand_paths, load_vectors

    options = EvalOptions(oov=parse_choices(Oov, _names(oov), "OOV policy"), seed=seed)
    if benchmarks is not None:
        options = dataclasses.replace(options, benchmarks=tuple(_names(benchmarks)))
    files = expand_paths(_paths(vectors), vector_set)
    rows: list[Row] = evaluate_rows([load_vectors(f) for f in files], options,
                                    [load_vectors(b) for b in _paths(baselines)], progress=progress)  # fmt: skip
    return rows


__all__ = ["ConfigError", "derive", "evaluate", "export", "load", "run"]
