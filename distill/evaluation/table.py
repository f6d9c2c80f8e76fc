"""The paper's Table 1 in one call: distil every layer with both poolings, train same-corpus baselines,
evaluate everything on one vocabulary, write the report and the score-by-layer plot."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from distill.config import Effect, RunConfig
from distill.corpus import streamed
from distill.errors import ConfigError
from distill.evaluation.baselines import BaselineConfig, Method, reusable_baselines, train_baselines, training_words
from distill.evaluation.report import EvalOptions, Row, evaluate_rows, write_report
from distill.evaluation.vectors import expand_paths, load_vectors
from distill.files import subfolder
from distill.names import BASELINES, BASELINES_DIR, TABLE_DIR
from distill.paths import corpus_slug, data_dir, default_corpus, default_out
from distill.plan import package_versions, plan_run
from distill.rundir import RunDir, check_own_folder, read_vocab_counts
from distill.vectors.reader import check_vector_file
from distill.workdir import finished_as_asked

logger = logging.getLogger(__name__)

#: Published vectors shipped in the data folder, added as a baseline row when present.
PUBLISHED = {"vectors/glove.6B.50d.cs124-4k.txt": "GloVe 6B 50d, published (4k-word subset)"}


@dataclass(frozen=True)
class TableConfig:
    runs: tuple[RunConfig, ...]  # one per model; layers and poolings as wanted in the table
    methods: tuple[Method, ...] = (Method.FASTTEXT, Method.WORD2VEC, Method.GLOVE)
    baseline_files: tuple[str, ...] = ()
    published: bool = True  # add the published GloVe subset of the data folder
    evaluation: EvalOptions = field(default_factory=EvalOptions)
    out: Path | None = None  # one model: its run folder (default outputs/<model>-<corpus>), report in <out>/table;
    # several models: each in outputs/<model>-<corpus> (reused), report in <out> (default outputs/table-<corpus>)
    reuse: bool = True  # reuse a finished distillation / baseline folder made with the same options
    progress: bool = True


def _reusable_run(config: RunConfig, out: Path) -> bool:
    """Whether ``out`` holds a finished run whose vectors are those ``config`` would give, proven by content: its
    model, corpus and files (:func:`finished_as_asked`; the options with the model's defaults resolved, as the
    run resolved them); other outputs and the tuning may differ."""
    plan = plan_run(config)
    versions = package_versions()
    ignored = (Effect.NONE, Effect.FILES, Effect.AFTER)
    return finished_as_asked(out, plan.config, plan.corpus, versions, *ignored) is not None


def _check_before_distilling(config: TableConfig, root: Path, outs: list[Path]) -> None:
    """ConfigError, before minutes of distilling, for a table that could not finish or would replace files."""
    if len(set(outs)) < len(outs):
        twice = next(o for o in outs if outs.count(o) > 1)
        raise ConfigError(f"two of the table's models would be distilled into one folder ({twice}): give each once")
    if len(outs) > 1:  # the report of several models would replace a run's or an export's own
        check_own_folder(root, "the table of several models")
    for extra_file in config.baseline_files:
        check_vector_file(extra_file)


def make_table(
    config: TableConfig, distil: Callable[[RunConfig], Any]
) -> tuple[list[Row], list[Path], dict[str, float]]:
    """Distil (``distil(run_config)``: the pipeline), train baselines, evaluate, write ``report.md``,
    ``report.json`` and plots; return rows, files and timings."""
    if not config.runs:
        raise ConfigError("give at least one model")
    corpus = config.runs[0].corpus or (str(default_corpus()),)
    if config.methods and any(map(streamed, corpus)):
        raise ConfigError("the table reads its corpus twice (to distil, then to train the baselines): give a file, "
                          "not stdin or a pipe, or --baselines none")  # fmt: skip
    single = len(config.runs) == 1
    root = Path(
        config.out
        or (default_out(config.runs[0].model, corpus) if single else Path("outputs") / f"table-{corpus_slug(corpus)}")
    )
    outs = [Path(run.out or (root if single else default_out(run.model, corpus))) for run in config.runs]
    _check_before_distilling(config, root, outs)
    timings: dict[str, float] = {}
    vector_files: list[Path] = []
    for run, out in zip(config.runs, outs, strict=True):
        run = replace(run, out=str(out), corpus=run.corpus or corpus)
        if config.reuse and _reusable_run(run, out):
            logger.info("reusing the distillation in %s", out)
        else:
            t0 = time.perf_counter()
            distil(run)
            timings[f"distill {run.model}"] = time.perf_counter() - t0
        vector_files += expand_paths([out])
    vocab_dir = outs[0]
    table_out = root / TABLE_DIR if single else root

    baselines = []
    if config.methods:
        base_out = subfolder(vocab_dir, BASELINES_DIR)
        manifest = RunDir(vocab_dir).manifest()
        base_config = BaselineConfig(
            corpus=tuple(manifest["config"]["corpus"]),
            out=base_out,
            methods=config.methods,
            vocab=str(vocab_dir),
            seed=config.runs[0].seed,
            progress=config.progress,
        )
        words, _ = training_words(base_config)
        if config.reuse and reusable_baselines(base_out, base_config, words, manifest["corpus"]["files"]):
            logger.info("reusing the baselines in %s (same words, corpus contents and options)", base_out)
        else:
            result = train_baselines(base_config)
            timings.update({f"baseline {k}": v for k, v in result.seconds.items() if k != "read_corpus"})
        baselines += [load_vectors(base_out / f"{m.value}.vec.txt") for m in config.methods]
    extra = list(config.baseline_files)
    labels: dict[str, str] = {}
    if config.published:
        for rel, label in PUBLISHED.items():
            if (data_dir() / rel).is_file():
                extra.append(str(data_dir() / rel))
                labels[str(data_dir() / rel)] = label
    baselines += [load_vectors(p, labels.get(p)) for p in extra]

    vocab = list(read_vocab_counts(RunDir(vocab_dir).vocab_path))
    t0 = time.perf_counter()
    rows = evaluate_rows([load_vectors(p) for p in vector_files], config.evaluation, baselines, vocab, config.progress)
    timings["evaluate"] = time.perf_counter() - t0
    notes = _notes(vocab_dir, len(vocab), timings)
    files = write_report(rows, config.evaluation, table_out, title="Static vectors against baselines", notes=notes)
    return rows, files, timings


def _baseline_times(path: Path) -> str:
    """``fasttext 12 s; ...`` from the baselines' record, or nothing when there is none or it says no such thing."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))["files"].values()
        return "; ".join(f"{r['method']} {float(r['train_seconds']):.0f} s" for r in records)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""


def _notes(run_dir: Path, n_vocab: int, timings: dict[str, float]) -> Sequence[str]:
    m = RunDir(run_dir).manifest()
    corpus = ", ".join(Path(f["path"]).name for f in m["corpus"]["files"])
    notes = [
        f"corpus: {corpus} ({m['corpus']['words']:,} words); model: {m['model']['name']} ({m['model']['source']})",
        f"every row is evaluated on the distillation's vocabulary ({n_vocab:,} words, "
        f"{'lowercased' if m['vocabulary']['lowercase'] else 'cased'}, min count {m['config']['min_count']}): "
        "words outside it count as missing, for the baselines too",
        f"occurrences per word: at most {m['config']['max_occurrences']}, seed {m['config']['seed']}",
    ]
    if trained := _baseline_times(run_dir / BASELINES_DIR / BASELINES):
        notes.append(f"same-corpus baselines trained on the same words and tokenisation ({trained})")
    notes += [f"{k}: {v:.0f} s" for k, v in timings.items() if not k.startswith("baseline")]
    return notes
