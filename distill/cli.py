"""Command line: options -> RunConfig -> one library call -> a short summary."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any, Optional

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
            analyze=analyze,
            pieces=pieces,
            best=best,
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


def _evaluation_options(
    benchmarks: str, oov: str, analogy_method: str, analogy_top_n: int | None, case: str, seed: int
) -> Any:
    from distill.evaluation.datasets import REGISTRY
    from distill.evaluation.metrics import AnalogyMethod, Oov, check_top_n
    from distill.evaluation.report import EvalOptions

    names = tuple(REGISTRY) if benchmarks == "all" else tuple(b.strip() for b in benchmarks.split(","))
    unknown = [b for b in names if b not in REGISTRY]
    if unknown:
        raise ConfigError(f"unknown benchmark {', '.join(unknown)}; use all or some of: {', '.join(REGISTRY)}")
    cases = {"auto": None, "lower": True, "keep": False}
    if case not in cases:
        raise ConfigError(f"--case must be auto, lower or keep, not {case!r}")
    try:
        policies = tuple(Oov(o.strip()) for o in oov.split(","))
        methods = tuple(AnalogyMethod(m.strip()) for m in analogy_method.split(","))
    except ValueError as err:
        raise ConfigError(f"{err}; --oov takes standard,paper and --analogy-method 3cosadd,3cosmul") from err
    return EvalOptions(names, policies, methods, check_top_n(analogy_top_n), cases[case], seed)


BenchmarksOpt = Annotated[
    str,
    typer.Option(
        help="Benchmarks, comma-separated, or all: simlex999, men, ws353, ws353_sim, ws353_rel, rw, "
        "mturk287, google, msr, semeval2012, ap, bless, battig, essli2008."
    ),
]
OovOpt = Annotated[
    str,
    typer.Option(
        help="OOV policies: standard (skip items with a missing word, show coverage), paper "
        "(a missing word gets the mean vector, as Ethayarajh 2019), or both."
    ),
]
MethodOpt = Annotated[str, typer.Option(help="Analogy scoring: 3cosadd, 3cosmul, or both.")]
TopNOpt = Annotated[Optional[int], typer.Option(help="Analogy candidates: the N most frequent words (default: all).")]
CaseOpt = Annotated[
    str, typer.Option(help="Benchmark words: lower, keep, or auto (lower when the vocabulary has no capitals).")
]


@app.command()
def evaluate(
    vectors: Annotated[
        list[str], typer.Argument(help="Vector files (word2vec .txt/.bin, GloVe text, .gz) or run folders.")
    ],
    baseline: Annotated[
        Optional[list[str]], typer.Option(help="Baseline vector file(s) (glove.6B.300d.txt, crawl-300d-2M.vec ...).")
    ] = None,
    out: Annotated[
        Optional[str], typer.Option(help="Folder for report.md, report.json and plots. Default: beside the vectors.")
    ] = None,
    benchmarks: BenchmarksOpt = "all",
    oov: OovOpt = "standard,paper",
    analogy_method: MethodOpt = "3cosadd,3cosmul",
    analogy_top_n: TopNOpt = None,
    case: CaseOpt = "auto",
    restrict_vocab: Annotated[
        Optional[str],
        typer.Option(help="Evaluate every row on these words only: a run folder, its vocab.tsv or a word list."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the clustering (categorization).")] = 0,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")] = False,
) -> None:
    """Score vectors on similarity, analogy, categorization and SemEval-2012 benchmarks; write a report."""
    from distill.baselines import read_vocab
    from distill.evaluation.report import evaluate_rows, markdown, write_report
    from distill.evaluation.vectors import expand_paths, load_vectors

    _logging(verbose)
    try:
        options = _evaluation_options(benchmarks, oov, analogy_method, analogy_top_n, case, seed)
        files = expand_paths(list(vectors))
        rows = evaluate_rows(
            [load_vectors(f) for f in files],
            options,
            [load_vectors(b) for b in baseline or ()],
            read_vocab(restrict_vocab) if restrict_vocab else None,
            progress,
        )
        notes = [f"evaluated on the words of {restrict_vocab}"] if restrict_vocab else []
        written = write_report(rows, options, out or files[0].parent, notes=notes)
    except DistillError as err:
        _fail(err)
    typer.echo(markdown(rows, options, notes=notes))
    typer.echo("wrote " + ", ".join(map(str, written)))


@app.command()
def baselines(
    corpus: Annotated[list[str], typer.Option(help="Text file(s) to train on, as for distill run.")],
    vocab: Annotated[
        Optional[str],
        typer.Option(help="Train on exactly these words: a distill run folder, its vocab.tsv or a word list."),
    ] = None,
    out: Annotated[Optional[str], typer.Option(help="Output folder. Default: outputs/baselines-<corpus>.")] = None,
    methods: Annotated[
        str, typer.Option(help="fasttext, word2vec, glove, comma-separated.")
    ] = "fasttext,word2vec,glove",
    min_count: Annotated[int, typer.Option(help="Without --vocab: keep words seen at least this often.")] = 5,
    dim: Annotated[int, typer.Option(help="Vector size (the published GloVe and FastText use 300).")] = 300,
    epochs: Annotated[int, typer.Option(help="FastText / Word2Vec passes over the corpus.")] = 10,
    glove_epochs: Annotated[int, typer.Option(help="GloVe passes over the co-occurrence matrix.")] = 25,
    workers: Annotated[int, typer.Option(help="gensim threads (1 makes FastText / Word2Vec deterministic).")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of every method.")] = 0,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")] = False,
) -> None:
    """Train same-corpus FastText, Word2Vec (gensim, skip-gram) and GloVe baselines; word2vec text files."""
    from distill.baselines import BaselineConfig, describe, parse_methods, train_baselines

    _logging(verbose)
    try:
        config = BaselineConfig(
            corpus=tuple(corpus),
            out=Path(out) if out else None,
            methods=parse_methods(methods),
            vocab=vocab,
            min_count=min_count,
            dim=dim,
            epochs=epochs,
            glove_epochs=glove_epochs,
            workers=workers,
            seed=seed,
            progress=progress,
        )
        result = train_baselines(config)
    except DistillError as err:
        _fail(err)
    typer.echo(describe(result))


@app.command()
def table(
    model: Annotated[
        Optional[list[str]], typer.Option(help="Model(s) as for distill run; repeat for several. Default: minilm.")
    ] = None,
    corpus: Annotated[Optional[list[str]], typer.Option(help="Corpus file(s). Default: the STS sentences.")] = None,
    layers: Annotated[str, typer.Option(help="Layers to distil and compare.")] = "all",
    pooling: Annotated[str, typer.Option(help="Poolings to compare.")] = "pc,mean",
    baselines: Annotated[
        str, typer.Option(help="Same-corpus baselines to train (fasttext,word2vec,glove), or none.")
    ] = "fasttext,word2vec,glove",
    baseline: Annotated[Optional[list[str]], typer.Option(help="Published vector file(s) to add as rows.")] = None,
    out: Annotated[
        Optional[str],
        typer.Option(
            help="One model: folder of the run, its baselines/ and table/ (the report); default "
            "outputs/<model>-<corpus>. Several models: each runs in outputs/<model>-<corpus> and the report "
            "goes here (default outputs/table-<corpus>)."
        ),
    ] = None,
    max_occurrences: Annotated[int, typer.Option(help="Occurrences per word.")] = 200,
    min_count: Annotated[int, typer.Option(help="Keep words seen at least this often.")] = 5,
    benchmarks: BenchmarksOpt = "all",
    oov: OovOpt = "standard,paper",
    analogy_method: MethodOpt = "3cosadd,3cosmul",
    analogy_top_n: TopNOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of sampling, baselines and clustering.")] = 0,
    reuse: Annotated[
        bool, typer.Option(help="Reuse finished distillations and baselines made with the same options.")
    ] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")] = False,
) -> None:
    """The paper's Table 1: every layer x pooling of each model against same-corpus FastText, Word2Vec, GloVe."""
    from distill.baselines import parse_methods
    from distill.evaluation.report import markdown
    from distill.table import TableConfig, make_table

    _logging(verbose)
    try:
        runs = tuple(
            RunConfig(
                model=m,
                corpus=tuple(corpus or ()),
                layers=layers,
                pooling=tuple(pooling.split(",")),
                max_occurrences=max_occurrences,
                min_count=min_count,
                seed=seed,
                progress=progress,
            )
            for m in model or ["minilm"]
        )
        options = _evaluation_options(benchmarks, oov, analogy_method, analogy_top_n, "auto", seed)
        config = TableConfig(
            runs=runs,
            methods=() if baselines == "none" else parse_methods(baselines),
            baseline_files=tuple(baseline or ()),
            evaluation=options,
            out=Path(out) if out else None,
            reuse=reuse,
            progress=progress,
        )
        rows, files, _ = make_table(config)
    except DistillError as err:
        _fail(err)
    typer.echo(markdown(rows, options))
    typer.echo("wrote " + ", ".join(map(str, files)))


@app.command()
def analyze(
    runs: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Run folders with an analysis.json: draw their measures in one set of plots, no model run."
        ),
    ] = None,
    model: Annotated[str, typer.Option(help="Model to analyse, as for distill run.")] = "minilm",
    corpus: Annotated[Optional[list[str]], typer.Option(help="Corpus file(s). Default: the STS sentences.")] = None,
    out: Annotated[
        Optional[str],
        typer.Option(help="Output folder. Default: outputs/<model>-<corpus> (outputs/contextuality with RUNS)."),
    ] = None,
    layers: Annotated[str, typer.Option(help="Layers to measure: all, a range (0-3) or a list.")] = "all",
    pooling: Annotated[str, typer.Option(help="Vectors written beside the analysis: pc, mean or pc,mean.")] = "pc,mean",
    max_occurrences: Annotated[int, typer.Option(help="Occurrences per word (self-similarity needs 5).")] = 200,
    min_count: Annotated[int, typer.Option(help="Keep words seen at least this often.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the occurrence sample and the random baselines.")] = 0,
    batch_size: Annotated[int, typer.Option(help="Sentences per forward pass.")] = 64,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N or mps.")] = "auto",
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")] = False,
) -> None:
    """How contextual is each layer: self-similarity, intra-sentence similarity, MEV and anisotropy (Ethayarajh
    2019), from the occurrences of one distillation run (no second forward pass); analysis.md/json and plots."""
    from distill.analysis_report import markdown, plot_measures, read_analysis

    _logging(verbose)
    try:
        if runs:
            analyses = [read_analysis(r) for r in runs]
            folder = Path(out or "outputs/contextuality")
            folder.mkdir(parents=True, exist_ok=True)
            files = plot_measures(analyses, folder)
            typer.echo("\n".join(markdown(a) for a in analyses))
            typer.echo("wrote " + ", ".join(map(str, files)))
            return
        from distill.pipeline import run_pipeline

        config = RunConfig(
            model=model,
            corpus=tuple(corpus or ()),
            out=out,
            layers=layers,
            pooling=tuple(pooling.split(",")),
            max_occurrences=max_occurrences,
            min_count=min_count,
            seed=seed,
            batch_size=batch_size,
            device=device,
            analyze=True,
            progress=progress,
        )
        result = run_pipeline(config)
    except DistillError as err:
        _fail(err)
    typer.echo((result.out / "analysis.md").read_text(encoding="utf-8"))
    a = result.manifest["analysis"]
    total = result.manifest["timings_seconds"]["total"]
    typer.echo(f"analysis: {a['seconds']:.1f} s of {total:.1f} s; files in {result.out}")


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


def main() -> None:
    app()
