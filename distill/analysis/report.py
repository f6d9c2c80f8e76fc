"""Write a contextuality analysis: analysis.json, analysis.md and one plot per measure (runs overlaid)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distill.errors import ConfigError
from distill.files import atomic_path, write_json
from distill.names import ANALYSIS, ANALYSIS_REPORT

#: Each measure: its field, its field adjusted for anisotropy, the plot's title, its y axis, its file.
MEASURES = (
    ("self_similarity", "self_similarity_adjusted", "Self-similarity",
     "mean cosine of a word's occurrences", "self_similarity.png"),
    ("intra_sentence", "intra_sentence_adjusted", "Intra-sentence similarity",
     "mean cosine of a word and its sentence's mean", "intra_sentence.png"),
    ("mev", "mev_adjusted", "Maximum explainable variance (uncentered)",
     "share of variance, first component", "mev.png"),
    ("mev_centered", "mev_centered_adjusted", "Maximum explainable variance (centered, as PCA)",
     "share of variance, first component", "mev_centered.png"),
    ("anisotropy", None, "Anisotropy (mean cosine of random occurrences)", "mean cosine", "anisotropy.png"),
)  # fmt: skip


def markdown(analysis: dict[str, Any]) -> str:
    layers = analysis["layers"]
    lines = [
        f"# Contextuality of {analysis.get('model', 'the model')} on {analysis.get('corpus', 'the corpus')}",
        "",
        f"- {analysis['words_measured']:,} words with at least {analysis['min_occurrences']} occurrences; "
        f"{analysis['sentences_measured']:,} model windows for intra-sentence similarity.",
        "- adjusted = raw minus the anisotropy baseline (MEV: minus the MEV of as many random occurrences as the "
        "word has).",
        "- MEV = sigma_1^2 / sum sigma_i^2 of a word's occurrence matrix; centered: of the matrix minus its mean "
        "(the share of variance PCA's first component explains, as the paper's code computes it).",
        "",
        "| layer | anisotropy | self-sim | self-sim adj. | intra-sent. | intra-sent. adj. | MEV | MEV adj. "
        "| MEV centered | MEV c. adj. | words MEV c. adj. < 5% |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for layer, r in layers.items():
        intra = f"{r['intra_sentence']:.3f} | {r['intra_sentence_adjusted']:.3f}" if "intra_sentence" in r else "– | –"
        lines.append(
            f"| {layer} | {r['anisotropy']:.3f} | {r['self_similarity']:.3f} | {r['self_similarity_adjusted']:.3f} | "
            f"{intra} | {r['mev']:.3f} | {r['mev_adjusted']:.3f} | {r['mev_centered']:.3f} | "
            f"{r['mev_centered_adjusted']:.3f} | {r['mev_centered_adjusted_share_under_5_percent']:.1%} |"
        )
    groups = list(next(iter(layers.values()))["self_similarity_by_group"])
    sizes = analysis["group_sizes"]
    lines += ["", "## Self-similarity by kind of word", ""]
    lines.append("| layer | " + " | ".join(f"{g} ({sizes[g]:,})" for g in groups) + " |")
    lines.append("|---:|" + "---:|" * len(groups))
    for layer, r in layers.items():
        lines.append(f"| {layer} | " + " | ".join(_mean(r["self_similarity_by_group"][g]) for g in groups) + " |")
    return "\n".join(lines) + "\n"


def _mean(value: float | None) -> str:
    """A group's mean, or a dash for a group without words (``null`` in ``analysis.json``)."""
    return "–" if value is None or value != value else f"{value:.3f}"


def read_analysis(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / ANALYSIS
    if not Path(run_dir).is_dir():
        raise ConfigError(f"{run_dir} is not a folder; give the --out of a distill analyze run")
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} has no analysis.json; run distill analyze --model ... --out {shlex.quote(str(run_dir))} first"
        )
    try:
        analysis = json.loads(path.read_text(encoding="utf-8"))
        markdown(analysis)  # every field the report and the plots read, of the kind they read
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError, StopIteration) as err:
        raise ConfigError(f"{path} is damaged ({type(err).__name__}: {err}); run distill analyze again") from err
    analysis["label"] = Path(run_dir).resolve().name  # runs drawn together are told apart by their folders
    return analysis


def plot_measures(analyses: Sequence[dict[str, Any]], out: str | Path) -> list[Path]:
    """One figure per measure: raw (solid) and adjusted (dashed) against layer, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out = Path(out)
    files = []
    for raw, adjusted, title, measured, name in MEASURES:
        if not any(raw in r for a in analyses for r in a["layers"].values()):
            continue
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for i, analysis in enumerate(analyses):
            label = analysis.get("label", f"run {i + 1}")
            layers = [(int(k), r) for k, r in analysis["layers"].items() if raw in r]
            x = [k for k, _ in layers]
            ax.plot(x, [r[raw] for _, r in layers], marker="o", color=f"C{i}", label=f"{label}")
            if adjusted:
                ax.plot(
                    x,
                    [r[adjusted] for _, r in layers],
                    marker="s",
                    linestyle="--",
                    color=f"C{i}",
                    label=f"{label}, adjusted",
                )
        ax.set_xlabel("layer (0: the embeddings)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(measured)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        with atomic_path(out / name) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
        plt.close(fig)
        files.append(out / name)
    return files


def write_analysis(analysis: dict[str, Any], out: Path) -> list[Path]:
    """``analysis.json``, ``analysis.md`` and the plots of a run's measures, in its folder ``out``."""
    text = markdown(analysis)
    plots = plot_measures([analysis], out)
    with atomic_path(out / ANALYSIS_REPORT) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return [write_json(analysis, out / ANALYSIS), out / ANALYSIS_REPORT, *plots]
