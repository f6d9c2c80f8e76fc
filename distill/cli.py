"""Command line: options -> RunConfig -> one library call -> a short summary."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from distill.config import DistillError, EncodingErrors, RunConfig

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
            help="Text file(s), one sentence or paragraph per line; .gz is read; - reads stdin. "
            "Repeat the option for several files. Default: the STS sentences of the paper."
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
        str, typer.Option(help="auto (bf16/fp16 on GPU, fp32 on CPU), float32, float16 or bfloat16.")
    ] = "auto",
    gguf_file: Annotated[
        Optional[str], typer.Option(help="GGUF weights file inside the model folder (transformers' GGUF loading).")
    ] = None,
    revision: Annotated[Optional[str], typer.Option(help="Hub revision (branch, tag or commit).")] = None,
    normalize: Annotated[bool, typer.Option(help="L2-normalise every output vector.")] = False,
    encoding_errors: Annotated[
        EncodingErrors, typer.Option(help="strict: stop at bytes that are not UTF-8; replace: use U+FFFD.")
    ] = EncodingErrors.STRICT,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")] = False,
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
            encoding_errors=encoding_errors,
            progress=progress,
        )
        result = run_pipeline(config)
    except DistillError as err:
        _fail(err)
    typer.echo(summary(result))


@app.command()
def neighbors(
    vectors: Annotated[Path, typer.Argument(help="A .txt/.bin vector file, or a run folder.")],
    words: Annotated[list[str], typer.Argument(help="Query words.")],
    k: Annotated[int, typer.Option("-k", help="Neighbours per word.")] = 10,
    layer: Annotated[Optional[int], typer.Option(help="Layer, when VECTORS is a run folder.")] = None,
    pooling: Annotated[str, typer.Option(help="Pooling, when VECTORS is a run folder.")] = "pc",
) -> None:
    """Nearest neighbours by cosine similarity (gensim most_similar)."""
    from distill.pipeline import load

    try:
        kv = load(vectors, layer=layer, pooling=pooling)
    except DistillError as err:
        _fail(err)
    for word in words:
        if word not in kv.key_to_index:
            typer.echo(f"{word}: not in the vocabulary", err=True)
            continue
        pairs = ", ".join(f"{w} {s:.3f}" for w, s in kv.most_similar(word, topn=k))
        typer.echo(f"{word}: {pairs}")


def main() -> None:
    app()
