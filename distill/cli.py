"""Command line: options -> RunConfig -> one library call -> a short summary."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from distill.config import ConfigError, DistillError, EncodingErrors, RunConfig

app = typer.Typer(
    help=(
        "Distil static word vectors from a contextual language model (Ethayarajh 2019): every vocabulary "
        "word's sampled occurrences go through the model once, and each word's occurrence matrix is "
        "reduced to one vector (first principal component or mean). Outputs load in gensim and FAISS."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


ProgressOpt = Annotated[bool, typer.Option(help="Show progress bars.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")]


def _fail(err: DistillError) -> None:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(2)


def _logging(verbose: bool) -> None:
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("transformers", "huggingface_hub", "urllib3", "gensim", "faiss"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


@app.command()
def run(
    model: Annotated[
        str,
        typer.Option(help="Alias (bert, bert-uncased, gpt2, roberta, minilm, smollm2), hub id, or local folder."),
    ] = "minilm",
    corpus: Annotated[
        Optional[list[str]],
        typer.Option(
            help="Text file(s), one sentence or paragraph per line; .gz is read; a folder gives its .txt/.gz "
            "files; - reads stdin. Files are streamed, never loaded whole. Repeat the option for several. "
            "Default: the STS sentences of the paper."
        ),
    ] = None,
    out: Annotated[Optional[str], typer.Option(help="Output folder. Default: outputs/<model>-<corpus>.")] = None,
    layers: Annotated[
        str, typer.Option(help="Hidden states to keep: 1, 1,3, 0-3 or all (0 = embedding output).")
    ] = "1",
    pooling: Annotated[
        str, typer.Option(help="pc (first principal component, the paper's), mean, or both: pc,mean.")
    ] = "pc",
    min_count: Annotated[int, typer.Option(help="Keep words seen at least this often.")] = 5,
    max_vocab: Annotated[Optional[int], typer.Option(help="Keep at most this many most frequent words.")] = None,
    vocab_file: Annotated[
        Optional[str], typer.Option(help="Word list (one per line): distil exactly these words.")
    ] = None,
    lowercase: Annotated[
        Optional[bool],
        typer.Option(
            "--lowercase/--keep-case",
            help="Fold case when building the vocabulary. Default: follow the model (lowercase for uncased models).",
        ),
    ] = None,
    alpha_only: Annotated[
        bool, typer.Option("--alpha-only/--any-word", help="Only alphabetic words enter the vocabulary.")
    ] = True,
    max_occurrences: Annotated[
        int, typer.Option(help="Occurrences per word, sampled uniformly (seeded) when a word has more.")
    ] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the occurrence sample; same seed, same vectors.")] = 0,
    sampling: Annotated[
        str,
        typer.Option(
            help="uniform: each word's occurrences drawn from all of the corpus. greedy: a seeded streaming "
            "shuffle of the lines, encoding only lines that hold a word still short of its occurrences, "
            "stopping when all are full: far fewer tokens encoded on a large corpus."
        ),
    ] = "uniform",
    store_dtype: Annotated[
        str,
        typer.Option(
            help="Numbers in the occurrence store: float32, float16 (half the memory "
            "and disk), or auto (float16 when float32 would take over half the available memory)."
        ),
    ] = "auto",
    store: Annotated[
        str,
        typer.Option(
            help="Where occurrence vectors wait for the reduction: memory (saved to OUT/.distill-work at each "
            "checkpoint), disk (files in OUT/.distill-work, written as they come, read through the page "
            "cache), or auto (memory when the store takes at most a third of the available memory)."
        ),
    ] = "auto",
    chunk_size: Annotated[
        int,
        typer.Option(help="Sentences tokenized and length-sorted together; the unit of a checkpoint."),
    ] = 4096,
    checkpoint_every: Annotated[
        float,
        typer.Option(
            help="Seconds between checkpoints of the encoding pass (0: after every chunk). A killed run goes on "
            "from its last checkpoint; a run shorter than this writes none."
        ),
    ] = 300.0,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume/--restart",
            help="Go on from the checkpoint a killed or interrupted run with the same options and corpus left "
            "in OUT/.distill-work; --restart starts afresh.",
        ),
    ] = True,
    engine: Annotated[
        str,
        typer.Option(help="local, or ray: encode on Ray Data actors (one per GPU, or per CPU worker) and merge."),
    ] = "local",
    workers: Annotated[
        Optional[int], typer.Option(help="Ray encoder actors. Default: the GPUs, else half the CPUs.")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Sentences per forward pass (length-sorted).")] = 64,
    max_length: Annotated[
        Optional[int],
        typer.Option(
            help="Tokens per window; longer sentences are split into windows. "
            "Default: the model's maximum, at most 512."
        ),
    ] = None,
    stride: Annotated[int, typer.Option(help="Tokens shared by consecutive windows of a long sentence.")] = 32,
    device: Annotated[str, typer.Option(help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps.")] = "auto",
    dtype: Annotated[
        str,
        typer.Option(
            help="auto (bf16/fp16 on GPU, fp32 on CPU), float32, float16 or bfloat16. On a CPU with AMX "
            "(Intel Xeon 4th generation and later) bfloat16 runs MiniLM 2.2x faster than "
            "fp32, its vectors within cosine 0.9998 of fp32's."
        ),
    ] = "auto",
    gguf_file: Annotated[
        Optional[str], typer.Option(help="GGUF weights file inside the model folder (transformers' GGUF loading).")
    ] = None,
    revision: Annotated[Optional[str], typer.Option(help="Hub revision (branch, tag or commit).")] = None,
    normalize: Annotated[bool, typer.Option(help="L2-normalise every output vector.")] = False,
    analyze: Annotated[
        bool, typer.Option(help="Also measure how contextual each layer is (see distill analyze --help).")
    ] = False,
    best: Annotated[
        bool,
        typer.Option(
            help="Also write the recommended set (benchmarks/quality_sweep.py): the mean vectors of the upper "
            "third of the layers, averaged (layers4-6.mean for a 6-layer model)."
        ),
    ] = False,
    pieces: Annotated[
        bool,
        typer.Option(
            help="Also average a vector for every piece of the model's vocabulary (layerL.pieces.npz): "
            "words outside the vocabulary then get the mean of their pieces' vectors."
        ),
    ] = False,
    encoding_errors: Annotated[
        EncodingErrors, typer.Option(help="strict: stop at bytes that are not UTF-8; replace: use U+FFFD.")
    ] = EncodingErrors.STRICT,
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """Distil static vectors: word2vec .txt/.bin, a FAISS index and manifest.json per layer and pooling."""
    from distill.pipeline import run_pipeline, summary

    _logging(verbose)
    try:
        config = RunConfig(
            model=model,
            corpus=tuple(corpus or ()),
            out=out,
            layers=layers,
            pooling=tuple(pooling.split(",")),
            min_count=min_count,
            max_vocab=max_vocab,
            vocab_file=vocab_file,
            lowercase=lowercase,
            alpha_only=alpha_only,
            max_occurrences=max_occurrences,
            seed=seed,
            batch_size=batch_size,
            max_length=max_length,
            stride=stride,
            device=device,
            dtype=dtype,
            gguf_file=gguf_file,
            revision=revision,
            normalize=normalize,
            analyze=analyze,
            pieces=pieces,
            best=best,
            encoding_errors=encoding_errors,
            sampling=sampling,
            store_dtype=store_dtype,
            store=store,
            chunk_size=chunk_size,
            checkpoint_every=checkpoint_every,
            resume=resume,
            engine=engine,
            workers=workers,
            progress=progress,
        )
        result = run_pipeline(config)
    except DistillError as err:
        _fail(err)
    except KeyboardInterrupt:
        typer.echo("interrupted; the same command goes on from the last checkpoint (--restart starts afresh)", err=True)
        raise typer.Exit(130) from None
    typer.echo(summary(result))


@app.command()
def neighbors(
    vectors: Annotated[Path, typer.Argument(help="A .txt/.bin vector file, or a run folder.")],
    words: Annotated[list[str], typer.Argument(help="Query words.")],
    k: Annotated[int, typer.Option("-k", help="Neighbours per word.")] = 10,
    layer: Annotated[Optional[int], typer.Option(help="Layer, when VECTORS is a run folder.")] = None,
    pooling: Annotated[str, typer.Option(help="Pooling, when VECTORS is a run folder.")] = "pc",
    index: Annotated[
        str,
        typer.Option(help="FAISS index: flat (exact), hnsw (graph) or ivfpq (compressed); built once, kept beside."),
    ] = "flat",
) -> None:
    """Nearest neighbours by cosine similarity, searched in a FAISS index."""
    from distill.export import INDEX_KINDS
    from distill.search import Searcher

    try:
        if index not in INDEX_KINDS:
            raise ConfigError(f"unknown index {index!r}; use one of: {', '.join(INDEX_KINDS)}")
        searcher = Searcher.open(vectors, layer=layer, pooling=pooling, kind=index)
    except DistillError as err:
        _fail(err)
    for word, hits in zip(words, searcher.neighbors(words, k)):
        if hits is None:
            hint = "" if searcher.pieces is not None else " (distill run --pieces gives OOV words a vector)"
            typer.echo(f"{word}: not in the vocabulary{hint}", err=True)
            continue
        source = " (from its pieces)" if searcher.vector(word)[1] == "pieces" else ""
        typer.echo(f"{word}{source}: " + ", ".join(f"{w} {s:.3f}" for w, s in hits))


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A distill run folder.")],
    format: Annotated[
        str, typer.Option(help="word2vec, kv (gensim), model2vec, sentence-transformers, npy; comma-separated.")
    ] = "kv,model2vec,sentence-transformers,npy",
    layer: Annotated[Optional[int], typer.Option(help="Layer to export. Default: the run's first.")] = None,
    pooling: Annotated[str, typer.Option(help="Pooling to export.")] = "pc",
    dtype: Annotated[str, typer.Option(help="float32, float16 or int8 (int8 keeps a float32 scale).")] = "float32",
    int8_scale: Annotated[str, typer.Option(help="int8 scale per vector or per dimension.")] = "vector",
    dims: Annotated[Optional[int], typer.Option(help="PCA of the vocabulary to this many dimensions.")] = None,
    top_words: Annotated[Optional[int], typer.Option(help="Keep only the N most frequent words.")] = None,
    out: Annotated[Optional[str], typer.Option(help="Output folder. Default: RUN_DIR/export.")] = None,
) -> None:
    """Write the vectors for serving: gensim .kv, model2vec and sentence-transformers folders, .npy + vocab."""
    from distill.compress import DType, Scale
    from distill.formats import export_run, parse_formats

    try:
        try:
            dtype_, scale_ = DType(dtype), Scale(int8_scale)
        except ValueError as err:
            raise ConfigError(
                f"{err}; --dtype takes float32, float16, int8 and --int8-scale vector, dimension"
            ) from err
        written = export_run(
            run_dir,
            layer=layer,
            pooling=pooling,
            formats=parse_formats(format),
            out=out,
            dtype=dtype_,
            scale=scale_,
            dims=dims,
            top_words=top_words,
        )
    except DistillError as err:
        _fail(err)
    for path, size in written:
        typer.echo(f"{size / 1e6:8.2f} MB  {path}")


@app.command()
def derive(
    run_dir: Annotated[Path, typer.Argument(help="A finished distill run folder.")],
    layers: Annotated[str, typer.Option(help="Layers to combine: 1, 1-6, 0,2,4 or all.")] = "1",
    pooling: Annotated[str, typer.Option(help="pc, mean, or pc+mean (the sum of both, unit-normalised).")] = "pc",
    combine: Annotated[str, typer.Option(help="Several layers: mean of unit vectors, or concat.")] = "mean",
    remove_top: Annotated[
        Optional[int],
        typer.Option(
            help="All-but-the-top: remove the vocabulary mean and its D top principal directions (0: mean only)."
        ),
    ] = None,
    whiten: Annotated[bool, typer.Option(help="PCA-whiten the vocabulary.")] = False,
) -> None:
    """Derive a better set from a run's layer files (no model runs): combined layers, pc+mean, all-but-the-top."""
    from distill.derive import Recipe
    from distill.derive import derive as derive_set

    try:
        name, kv = derive_set(run_dir, Recipe(layers, pooling, combine, remove_top, whiten))
    except DistillError as err:
        _fail(err)
    typer.echo(f"wrote {run_dir}/{name}.txt, .bin, .faiss ({len(kv.index_to_key):,} words, {kv.vector_size} dims)")


from distill import cli_eval  # noqa: E402,F401  (registers evaluate, baselines, table, analyze)


def main() -> None:
    app()
