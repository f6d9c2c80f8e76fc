"""Evaluate sets of vectors on every benchmark and write the Table-1-style report (md, json, plots)."""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import Oov
from distill.errors import ConfigError, NothingCovered
from distill.evaluation.datasets import (
    REGISTRY,
    AnalogyDataset,
    CategorizationDataset,
    Kind,
    RelationalDataset,
    SimilarityDataset,
    load_benchmark,
)
from distill.evaluation.metrics import (
    AnalogyMethod,
    Score,
    evaluate_analogy,
    evaluate_categorization,
    evaluate_relational,
    evaluate_similarity,
    is_lowercase_vocabulary,
)
from distill.evaluation.vectors import Vectors
from distill.files import write_json
from distill.names import MANIFEST, REPORT, REPORT_DATA
from distill.progress import track
from distill.serve.anyword import open_fallback
from distill.vectors.keyed import l2_normalize, to_keyed_vectors

logger = logging.getLogger(__name__)

#: Columns of the markdown tables: (benchmark, section, short title).
COLUMNS = (
    ("simlex999", "all", "SimLex"),
    ("men", "all", "MEN"),
    ("ws353", "all", "WS353"),
    ("ws353_sim", "all", "WS-sim"),
    ("ws353_rel", "all", "WS-rel"),
    ("rw", "all", "RW"),
    ("mturk287", "all", "MTurk"),
    ("google", "all", "Google"),
    ("google", "semantic", "G-sem"),
    ("google", "syntactic", "G-syn"),
    ("msr", "all", "MSR"),
    ("semeval2012", "all", "SemEval"),
    ("ap", "all", "AP"),
    ("bless", "all", "BLESS"),
    ("battig", "all", "Battig"),
    ("essli2008", "all", "ESSLLI"),
)


@dataclass(frozen=True)
class EvalOptions:
    """What to score and how; the same for every row of a report."""

    benchmarks: tuple[str, ...] = tuple(REGISTRY)
    oov: tuple[Oov, ...] = (Oov.STANDARD, Oov.PAPER)
    analogy_methods: tuple[AnalogyMethod, ...] = (AnalogyMethod.COSADD, AnalogyMethod.COSMUL)
    analogy_top_n: int | None = None
    lowercase: bool | None = None  # None: lowercase benchmark words when the vocabulary is all lower case
    seed: int = 0


@dataclass
class Row:
    """One set of vectors and its scores."""

    label: str
    path: str
    meta: dict[str, Any]
    baseline: bool = False
    scores: list[Score] = field(default_factory=list)

    def get(self, benchmark: str, section: str = "all", oov: str = "standard", method: str = "3cosadd") -> Score | None:
        for s in self.scores:
            if (s.benchmark, s.section, s.oov) == (benchmark, section, oov) and s.method in ("", method):
                return s
        return None


def restrict(kv: Any, words: Iterable[str]) -> Any:
    """The vectors of ``kv`` whose word is in ``words``, in ``kv``'s order."""
    keep = set(words)
    rows = [i for i, w in enumerate(kv.index_to_key) if w in keep]
    if not rows:
        raise ConfigError("no word of the vectors is in the restricting vocabulary; check its casing")
    return to_keyed_vectors([kv.index_to_key[i] for i in rows], kv.vectors[rows])


def with_fallback(kv: Any, words: Iterable[str], fallback: Any, lowercase: bool) -> Any:
    """``kv`` plus a vector for each of ``words`` it lacks that ``fallback.vectors(words)`` gives (the run's
    pieces, or its model reading them alone), appended after its own words."""
    fold = str.lower if lowercase else str
    known = set(kv.index_to_key)
    missing = sorted({fold(w) for w in words} - known)
    extra = [(w, v) for w, v in zip(missing, fallback.vectors(missing)) if v is not None]
    if not extra:
        return kv
    vectors = np.vstack([kv.vectors, l2_normalize(np.array([v for _, v in extra], dtype=np.float32))
                         * np.linalg.norm(kv.vectors, axis=1).mean()])  # fmt: skip
    return to_keyed_vectors([*kv.index_to_key, *(w for w, _ in extra)], vectors)


def dataset_words(data: Any) -> set[str]:
    """Every word a similarity, relational or categorization benchmark scores."""
    if isinstance(data, SimilarityDataset):
        return {w for pair in data.pairs for w in pair}
    if isinstance(data, RelationalDataset):
        groups = [*data.prototypes.values(), *data.pairs.values()]
        return {w for group in groups for pair in group for w in pair}
    if isinstance(data, CategorizationDataset):
        return set(data.words)
    return set()


def _score_one(kv: Any, data: Any, oov: Oov, options: EvalOptions, lowercase: bool) -> list[Score]:
    if isinstance(data, SimilarityDataset):
        return [evaluate_similarity(kv, data, oov, lowercase)]
    if isinstance(data, AnalogyDataset):
        return [s for m in options.analogy_methods
                for s in evaluate_analogy(kv, data, m, oov, lowercase, options.analogy_top_n)]  # fmt: skip
    if isinstance(data, CategorizationDataset):
        return [evaluate_categorization(kv, data, oov, lowercase, options.seed)]
    return [evaluate_relational(kv, data, oov, lowercase)]


def score_vectors(
    kv: Any, options: EvalOptions, datasets: dict[str, Any] | None = None, fallbacks: dict[Oov, Any] | None = None
) -> list[Score]:
    """Every benchmark of ``options`` under every OOV policy (and analogy method).

    ``pieces`` and ``alone`` score the words ``kv`` lacks with their fallback in ``fallbacks`` (a run's
    ``SetFallback`` or ``AloneFallback``) and the rest as ``paper``; coverage is then of words with a vector
    of either kind. Analogies are not scored under them (their answers are searched in a vocabulary, which
    benchmark words must not extend), nor is anything without a fallback."""
    fallbacks = fallbacks or {}
    datasets = datasets if datasets is not None else {n: load_benchmark(n) for n in options.benchmarks}
    lowercase = is_lowercase_vocabulary(kv) if options.lowercase is None else options.lowercase
    scores: list[Score] = []
    for name, data in datasets.items():
        for oov in options.oov:
            target, policy = kv, oov
            if oov.fallback:
                fallback = fallbacks.get(oov)
                if fallback is None or isinstance(data, AnalogyDataset):
                    scores.append(Score(name, "none", math.nan, 0, 0, oov.value))
                    continue
                target, policy = with_fallback(kv, dataset_words(data), fallback, lowercase), Oov.PAPER
            try:
                found = _score_one(target, data, policy, options, lowercase)
            except NothingCovered:  # a score of nothing, with coverage 0 (said once per report); errors surface
                found = [Score(name, "none", math.nan, 0, 0, oov.value)]
            scores += [dataclasses.replace(s, oov=oov.value) for s in found]
    return scores


def run_fallback(path: str | Path, oov: Oov = Oov.PIECES) -> Any:
    """The ``pieces`` or ``alone`` fallback of a vector file in a run folder, else None (a file outside a run,
    a run without piece vectors, a set the fallback cannot follow)."""
    path = Path(path)
    if not (path.parent / MANIFEST).is_file():
        return None
    return open_fallback(path.parent, path.name.removesuffix(".gz").rsplit(".", 1)[0], oov.value)


def evaluate_rows(
    vectors: Sequence[Vectors],
    options: EvalOptions,
    baselines: Sequence[Vectors] = (),
    restrict_to: Iterable[str] | None = None,
    progress: bool = True,
) -> list[Row]:
    """Score each set of vectors (optionally restricted to one vocabulary); baselines are marked as such."""
    vocab = set(restrict_to) if restrict_to is not None else None
    datasets = {n: load_benchmark(n) for n in options.benchmarks}
    rows = []
    todo = [(v, False) for v in vectors] + [(v, True) for v in baselines]
    for vec, is_baseline in track(todo, "evaluating", "set", len(todo), not progress):
        kv = restrict(vec.kv, vocab) if vocab is not None else vec.kv
        meta = dict(vec.meta, evaluated_vocab_size=len(kv.index_to_key))
        fallbacks = {oov: run_fallback(vec.path, oov) for oov in options.oov if oov.fallback}
        rows.append(Row(vec.label, vec.path, meta, is_baseline, score_vectors(kv, options, datasets, fallbacks)))
    _say_uncovered(rows, options)
    return rows


def _say_uncovered(rows: Sequence[Row], options: EvalOptions) -> None:
    """One line per benchmark that some sets of vectors could score nothing of, with how many sets."""
    for name in options.benchmarks:
        empty = [r for r in rows if any(s.benchmark == name and s.metric == "none" and s.oov in
                                        (Oov.STANDARD.value, Oov.PAPER.value) for s in r.scores)]  # fmt: skip
        if empty:
            logger.warning(
                "%s: no item has all its words in the vocabulary of %d of %d sets of vectors (%s ...): too small a "
                "vocabulary, or one cased unlike the benchmark (see --case)",
                name,
                len(empty),
                len(rows),
                empty[0].label,
            )


def _cell(score: Score | None) -> str:
    if score is None:
        return ""
    if math.isnan(score.score):
        return "–"
    if score.all_questions is not None and score.oov == Oov.STANDARD.value and score.n_covered < score.n_total:
        return f"{score.score:.3f} ({score.n_covered}); {score.all_questions:.3f} of all"
    return f"{score.score:.3f} ({score.n_covered})"


def markdown(
    rows: Sequence[Row],
    options: EvalOptions,
    title: str = "Evaluation",
    notes: Sequence[str] = (),
    sentences: Sequence[Any] = (),
) -> str:
    """Tables per OOV policy (and analogy method): rows = vector sets, columns = benchmarks."""
    columns = [c for c in COLUMNS if c[0] in options.benchmarks]
    lines = [f"# {title}", ""]
    lines += [f"- {n}" for n in notes]
    lines += [
        "- similarity and SemEval: Spearman ρ; analogies: accuracy (question words excluded"
        + (f", candidates = top {options.analogy_top_n} words" if options.analogy_top_n else "")
        + "); categorization: cluster purity.",
        "- "
        + " ".join(f"`{p}`: {p.description}" + ("." if p is Oov.STANDARD else ", every item scored.") for p in Oov)
        + " `pieces` and `alone` score no analogies. (n) = items whose words all have a vector (from "
        "the vocabulary, or from the fallback). Analogies with questions not covered also give the share of all "
        'questions answered right ("of all"), a question with a missing word counting as wrong.',
        "",
    ]
    totals = {  # a benchmark's size, from whichever OOV policy scored it
        (b, s): next((x.n_total for r in rows for o in options.oov if (x := r.get(b, s, o.value)) and x.n_total), 0)
        for b, s, _ in columns
    }
    for oov in options.oov:
        for method in options.analogy_methods if oov is Oov.STANDARD else options.analogy_methods[:1]:
            analogies = [c for c in columns if REGISTRY[c[0]].kind is Kind.ANALOGY]
            cols = [] if oov.fallback else analogies  # pieces and alone score no analogies
            if method is options.analogy_methods[0]:
                cols = [c for c in columns if c not in analogies or not oov.fallback]
            if not cols:
                continue
            scored = any(c in analogies for c in cols)  # a heading names the analogies' method only with them
            lines.append(f"## OOV policy `{oov.value}`" + (f", analogies by {method.value}" if scored else ""))
            lines.append("")
            lines.append(
                "| vectors | "
                + " | ".join(f"{t} /{totals[(b, s)]}" if totals[(b, s)] else t for b, s, t in cols)
                + " |"
            )
            lines.append("|---|" + "---:|" * len(cols))
            for row in rows:
                cells = [_cell(row.get(b, s, oov.value, method.value)) for b, s, _ in cols]
                label = f"{row.label} (baseline)" if row.baseline else row.label
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
            lines.append("")
    if rows:
        lines += ["## Rows", "", "| vectors | file | vocabulary | dim | provenance |", "|---|---|---:|---:|---|"]
    for row in rows:
        prov = ", ".join(f"{k}={v}" for k, v in row.meta.items() if k not in ("vocab_size", "dim"))
        lines.append(
            f"| {row.label} | `{row.path}` | {row.meta.get('vocab_size', '')} | {row.meta.get('dim', '')} | {prov} |"
        )
    if sentences:
        from distill.evaluation.sentences import sentence_markdown

        lines += ["", sentence_markdown(sentences)]
    return "\n".join(lines) + "\n"


def to_json(rows: Sequence[Row], options: EvalOptions) -> dict[str, Any]:
    return {
        "options": {
            "benchmarks": list(options.benchmarks),
            "oov": [o.value for o in options.oov],
            "analogy_methods": [m.value for m in options.analogy_methods],
            "analogy_top_n": options.analogy_top_n,
            "lowercase": options.lowercase,
            "seed": options.seed,
        },
        "benchmark_files": {n: {"path": REGISTRY[n].path, "sha256": REGISTRY[n].sha256} for n in options.benchmarks},
        "rows": [
            {
                "label": r.label,
                "path": r.path,
                "baseline": r.baseline,
                "meta": r.meta,
                "scores": [asdict(s) for s in r.scores],
            }
            for r in rows
        ],
    }


def write_report(
    rows: Sequence[Row],
    options: EvalOptions,
    out: str | Path,
    title: str = "Evaluation",
    notes: Sequence[str] = (),
    sentences: Sequence[Any] = (),
) -> list[Path]:
    """``report.md``, ``report.json`` and the plots in ``out``; returns the files written. A plot the last
    report here drew (its ``report.json`` lists it) and this one does not is removed: it showed other scores."""
    from distill.evaluation.plots import plot_layers, plot_scores
    from distill.evaluation.sentences import sentence_json
    from distill.files import atomic_path, check_writable, member

    out = check_writable(out)
    drawn_before = _plots_listed(out / REPORT_DATA)
    with atomic_path(out / REPORT) as tmp:
        tmp.write_text(markdown(rows, options, title, notes, sentences), encoding="utf-8")
    plots = []
    if rows:
        panels = [c for c in COLUMNS if c[1] == "all" and c[0] in options.benchmarks]
        oov = options.oov[0]  # the plots show the first policy asked for (alone: not standard's nothing)
        plots.append(plot_scores(rows, out / SCORES_PLOT, panels, oov))
        if sum("layer" in r.meta for r in rows) > 1:
            plots.append(plot_layers(rows, out / LAYERS_PLOT, panels, oov))
    for name in drawn_before - {p.name for p in plots}:
        member(out, name).unlink(missing_ok=True)
    data = to_json(rows, options)
    data["plots"] = [p.name for p in plots]
    if sentences:
        data["sentences"] = sentence_json(sentences)
    return [out / REPORT, write_json(data, out / REPORT_DATA), *plots]


#: The plots a report draws beside it.
SCORES_PLOT, LAYERS_PLOT = "scores.png", "layers.png"


def _plots_listed(path: Path) -> set[str]:
    """The plots an earlier ``report.json`` says it drew (none when it is missing, a link or not ours)."""
    from distill.rundir import read_json_file

    data = read_json_file(path)
    listed = data.get("plots") if isinstance(data, dict) else None
    return {p for p in listed if p in (SCORES_PLOT, LAYERS_PLOT)} if isinstance(listed, list) else set()
