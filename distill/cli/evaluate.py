"""Command line, evaluation side: evaluate, baselines, table (the paper's Table 1) and analyze."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from distill.choices import Choice
from distill.cli.app import ProgressOpt, VerboseOpt, app, setup_logging, user_errors
from distill.cli.options import config_from, parameters, with_parameters
from distill.config import DEFAULT_MODEL, Oov, parse_choices
from distill.errors import ConfigError
from distill.names import ANALYSIS_REPORT


class Case(Choice):
    """How benchmark words are cased before lookup."""

    AUTO = "auto"  # lower when the vocabulary has no capitals
    LOWER = "lower"
    KEEP = "keep"


def evaluation_options(
    benchmarks: str, oov: str, analogy_method: str, analogy_top_n: int | None, case: Case, seed: int
) -> Any:
    from distill.evaluation.datasets import REGISTRY, available
    from distill.evaluation.metrics import AnalogyMethod, check_top_n
    from distill.evaluation.report import EvalOptions

    if benchmarks == "all":
        names, sts = tuple(n for n in REGISTRY if available(n)), wants_sentences(benchmarks)
        _say_missing([n for n in REGISTRY if n not in names] + ([] if sts else [SENTENCES]))
        if not names and not sts:
            raise ConfigError("no benchmark file found: set DISTILL_DATA to a folder that holds them")
    else:
        names = tuple(b.strip() for b in benchmarks.split(",") if b.strip() != SENTENCES)
    unknown = [b for b in names if b not in REGISTRY]
    if unknown:
        choices = ", ".join([*REGISTRY, SENTENCES])
        raise ConfigError(f"unknown benchmark {', '.join(unknown)}; use all or some of: {choices}")
    policies = parse_choices(Oov, oov, "OOV policy")
    methods = parse_choices(AnalogyMethod, analogy_method, "analogy method")
    lowercase = {Case.AUTO: None, Case.LOWER: True, Case.KEEP: False}[case]
    return EvalOptions(names, policies, methods, check_top_n(analogy_top_n), lowercase, seed)


#: The sentence benchmark's name in --benchmarks.
SENTENCES = "sts"


def wants_sentences(benchmarks: str) -> bool:
    """Whether STS is asked for: by name, or by ``all`` where its pairs are on this machine."""
    from distill.evaluation.datasets import find_file
    from distill.evaluation.sentences import STS_FILE

    if benchmarks != "all":
        return SENTENCES in {b.strip() for b in benchmarks.split(",")}
    return find_file(STS_FILE[0]) is not None


def _say_missing(names: list[str]) -> None:
    """One line naming the benchmarks ``all`` leaves out because their files are not on this machine."""
    if names:
        logging.getLogger("distill").warning(
            "skipping %s: not shipped with distill; set DISTILL_DATA to a folder that holds them "
            "(as ../shared/data lays them out)",
            ", ".join(names),
        )


BenchmarksOpt = Annotated[
    str,
    typer.Option(
        help="Benchmarks, comma-separated, or all: simlex999, men, ws353, ws353_sim, ws353_rel, rw, "
        "mturk287, google, msr, semeval2012, ap, bless, battig, essli2008, and sts (sentences: STS 2012-2016)."
    ),
]
OovOpt = Annotated[
    str,
    typer.Option(
        help="OOV policies, one or several: "
        + "; ".join(f"{p.value}: {p.description}" for p in Oov)
        + ". pieces and alone score no analogies; alone loads the model. pieces is the fallback of neighbors, "
        "distill.load and the exports; distill table keeps the paper's standard,paper."
    ),
]
MethodOpt = Annotated[str, typer.Option(help="Analogy scoring: 3cosadd, 3cosmul, or both.")]
TopNOpt = Annotated[Optional[int], typer.Option(help="Analogy candidates: the N most frequent words (default: all).")]
CaseOpt = Annotated[
    Case, typer.Option(help="Benchmark words: lower, keep, or auto (lower when the vocabulary has no capitals).")
]


@app.command()
def evaluate(
    vectors: Annotated[
        list[str],
        typer.Argument(
            help="Vector files (word2vec .txt/.bin, GloVe text, .gz), run folders, or exported model2vec / "
            "sentence-transformers folders (scored on sentences)."
        ),
    ],
    baseline: Annotated[
        Optional[list[str]],
        typer.Option(
            help="Baseline vector file(s) (glove.6B.300d.txt ...) or model2vec / sentence-transformers folders."
        ),
    ] = None,
    teacher: Annotated[
        Optional[str],
        typer.Option(help="Add the source transformer's own sentence scores (its sentence-transformers pooling)."),
    ] = None,
    out: Annotated[
        Optional[str],
        typer.Option(
            help="Folder for report.md, report.json and plots. Default: the first run folder given, or the "
            "folder of the first vector file."
        ),
    ] = None,
    benchmarks: BenchmarksOpt = "all",
    oov: OovOpt = "standard,pieces",
    analogy_method: MethodOpt = "3cosadd,3cosmul",
    analogy_top_n: TopNOpt = None,
    case: CaseOpt = Case.AUTO,
    restrict_vocab: Annotated[
        Optional[str],
        typer.Option(help="Evaluate every row on these words only: a run folder, its vocab.tsv or a word list."),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the clustering (categorization).")] = 0,
    vector_set: Annotated[
        Optional[str],
        typer.Option("--set", help="For run folders: this set only (best, layer1.pc ...). Default: every set."),
    ] = None,
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """Score vectors on word similarity, analogy, categorization, SemEval-2012 and STS sentence benchmarks."""
    from distill.evaluation.baselines import read_vocab
    from distill.evaluation.report import evaluate_rows, markdown, write_report
    from distill.evaluation.sentences import is_model2vec_folder, is_sentence_transformers_folder, teacher_encoder
    from distill.evaluation.vectors import check_set_of_runs, expand_paths, load_vectors
    from distill.files import output_folder
    from distill.rundir import check_own_folder

    setup_logging(verbose, progress)
    with user_errors(), contextlib.ExitStack() as stack:
        options = evaluation_options(benchmarks, oov, analogy_method, analogy_top_n, case, seed)
        if out is not None:  # before the scoring, which takes minutes
            if Path(out).is_dir() and Path(out).resolve() not in {_report_folder(Path(v)).resolve() for v in vectors}:
                check_own_folder(Path(out), "reports of other vectors")  # its own report would be replaced
            stack.enter_context(output_folder(out))
        sentences_asked = wants_sentences(benchmarks)
        if teacher is not None and not sentences_asked:
            raise ConfigError("--teacher scores the source transformer on STS sentences: add sts to --benchmarks")
        taught = teacher_encoder(teacher, progress) if teacher is not None else None  # one that cannot load fails now
        inputs, bases = [Path(v) for v in vectors], [Path(b) for b in baseline or ()]
        check_set_of_runs(inputs, vector_set)
        folders = [p for p in [*inputs, *bases] if is_model2vec_folder(p) or is_sentence_transformers_folder(p)]
        files = expand_paths([p for p in inputs if p not in folders], vector_set) if options.benchmarks else []
        rows = []
        if files or any(p not in folders for p in bases):
            rows = evaluate_rows([load_vectors(f) for f in files], options,
                                 [load_vectors(b) for b in bases if b not in folders],
                                 read_vocab(restrict_vocab) if restrict_vocab else None, progress)  # fmt: skip
        sentences = _sentence_scores(inputs, bases, vector_set, taught) if sentences_asked else []
        notes = [f"evaluated on the words of {restrict_vocab}"] if restrict_vocab else []
        folder = Path(out) if out else _report_folder(inputs[0])
        written = write_report(rows, options, folder, notes=notes, sentences=sentences)
        _record_report(folder, written)
    typer.echo(markdown(rows, options, notes=notes, sentences=sentences))
    typer.echo("wrote " + ", ".join(map(str, written)))


def _report_folder(first: Path) -> Path:
    """Where a report goes without ``--out``: into a folder given (a run, an export), else the vector file's."""
    return first if first.is_dir() else first.parent


def _record_report(folder: Path, written: list[Path]) -> None:
    """A report written into a run folder is listed in its manifest: the next run there removes it with the
    vectors it scored; one written into an export is listed in its export.json, which the next export there
    replaces whole (an unlisted file would stop it)."""
    from distill.files import add_to_listing
    from distill.manifest import is_our_manifest
    from distill.rundir import RunDir, read_json_file

    run = RunDir(folder)
    if is_our_manifest(read_json_file(run.manifest_path)):
        run.record_exports(written)
    else:
        add_to_listing(folder, written)


def _sentence_scores(
    inputs: list[Path], bases: list[Path], vector_set: str | None, teacher: tuple[Any, str] | None
) -> list[Any]:
    from distill.evaluation.sentences import load_sts, score_inputs, score_sts

    pairs = load_sts()
    scores = score_inputs(inputs, vector_set, pairs) + score_inputs(bases, None, pairs)
    if teacher is not None:
        encode, label = teacher
        scores.append(score_sts(encode, pairs, label))
    return scores


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
    min_count: Annotated[int, typer.Option(min=1, help="Without --vocab: keep words seen at least this often.")] = 5,
    dims: Annotated[int, typer.Option(min=1, help="Vector size (the published GloVe and FastText use 300).")] = 300,
    dim: Annotated[Optional[int], typer.Option(min=1, hidden=True)] = None,  # the old spelling of --dims
    epochs: Annotated[int, typer.Option(min=1, help="FastText / Word2Vec passes over the corpus.")] = 10,
    glove_epochs: Annotated[int, typer.Option(min=1, help="GloVe passes over the co-occurrence matrix.")] = 25,
    workers: Annotated[
        int, typer.Option(min=1, help="gensim threads (1 makes FastText / Word2Vec deterministic).")
    ] = 2,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every method.")] = 0,
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """Train same-corpus FastText, Word2Vec (gensim, skip-gram) and GloVe baselines; word2vec text files."""
    from distill.evaluation.baselines import BaselineConfig, describe, parse_methods, train_baselines

    setup_logging(verbose, progress)
    with user_errors():
        config = BaselineConfig(corpus=tuple(corpus), out=Path(out) if out else None, methods=parse_methods(methods),
                                vocab=vocab, min_count=min_count, dim=dims if dim is None else dim, epochs=epochs,
                                glove_epochs=glove_epochs, workers=workers, seed=seed, progress=progress)  # fmt: skip
        result = train_baselines(config)
    typer.echo(describe(result))


_TABLE_RUN = ("corpus", "layers", "pooling", "max_occurrences", "min_count", "seed")


@app.command()
@with_parameters(parameters(_TABLE_RUN, layers="all", pooling="pc,mean"))
def table(
    model: Annotated[
        Optional[list[str]],
        typer.Option(help=f"Model(s) as for distill run; repeat for several. Default: {DEFAULT_MODEL}."),
    ] = None,
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
    benchmarks: BenchmarksOpt = "all",
    oov: OovOpt = "standard,paper",
    analogy_method: MethodOpt = "3cosadd,3cosmul",
    analogy_top_n: TopNOpt = None,
    reuse: Annotated[
        bool, typer.Option(help="Reuse finished distillations and baselines made with the same options.")
    ] = True,
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
    **run_options: Any,
) -> None:
    """The paper's Table 1: every layer x pooling of each model against same-corpus FastText, Word2Vec, GloVe."""
    from distill.evaluation.baselines import parse_methods
    from distill.evaluation.report import markdown
    from distill.evaluation.table import TableConfig, make_table
    from distill.pipeline import run_pipeline

    setup_logging(verbose, progress)
    with user_errors():
        runs = tuple(config_from(run_options, model=m, progress=progress) for m in model or [DEFAULT_MODEL])
        options = evaluation_options(benchmarks, oov, analogy_method, analogy_top_n, Case.AUTO, runs[0].seed)
        config = TableConfig(runs=runs, methods=() if baselines == "none" else parse_methods(baselines),
                             baseline_files=tuple(baseline or ()), evaluation=options, out=Path(out) if out else None,
                             reuse=reuse, progress=progress)  # fmt: skip
        rows, files, _ = make_table(config, run_pipeline)
    typer.echo(markdown(rows, options))
    typer.echo("wrote " + ", ".join(map(str, files)))


_ANALYZE_RUN = ("model", "corpus", "layers", "pooling", "max_occurrences", "min_count", "seed", "batch_size", "device")


@app.command()
@with_parameters(parameters(_ANALYZE_RUN, layers="all", pooling="pc,mean"))
def analyze(
    runs: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Run folders with an analysis.json: draw their measures in one set of plots, no model run."
        ),
    ] = None,
    out: Annotated[
        Optional[str],
        typer.Option(help="Output folder. Default: outputs/<model>-<corpus> (outputs/contextuality with RUNS)."),
    ] = None,
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
    **run_options: Any,
) -> None:
    """How contextual is each layer: self-similarity, intra-sentence similarity, MEV and anisotropy (Ethayarajh
    2019), from the occurrences of one distillation run (no second forward pass); analysis.md/json and plots."""
    from distill.analysis.report import markdown, plot_measures, read_analysis
    from distill.files import check_writable
    from distill.rundir import check_own_folder

    setup_logging(verbose, progress)
    with user_errors():
        if runs:
            analyses = [read_analysis(r) for r in runs]
            folder = Path(out or "outputs/contextuality")
            check_own_folder(folder, "the plots of several runs")
            files = plot_measures(analyses, check_writable(folder))
            typer.echo("\n".join(markdown(a) for a in analyses))
            typer.echo("wrote " + ", ".join(map(str, files)))
            return
        from distill.pipeline import run_pipeline

        result = run_pipeline(config_from(run_options, out=out, analyze=True, progress=progress))
    typer.echo((result.out / ANALYSIS_REPORT).read_text(encoding="utf-8"))
    a = result.manifest["analysis"]
    total = result.manifest["timings_seconds"]["total"]
    typer.echo(f"analysis: {a['seconds']:.1f} s of {total:.1f} s; files in {result.out}")
