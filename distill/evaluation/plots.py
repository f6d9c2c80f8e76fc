"""Pictures of a report: scores per benchmark, and scores against layer with baselines as horizontal lines."""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distill.config import Oov
from distill.files import atomic_path

#: A panel: benchmark, section, title (the report's columns of the benchmarks asked for).
Panel = tuple[str, str, str]
#: Each metric as an axis names it.
METRICS = {"spearman": "Spearman ρ", "accuracy": "accuracy (3CosAdd)", "purity": "cluster purity"}


def _figure(n: int, labels: Sequence[str] = ()) -> tuple[Any, Any]:
    """A grid of ``n`` panels, three a row at most, each 4.2 x 3.2 inches; with ``labels`` (one bar each), the
    panels of a row share their bars' labels, written once at the left of the row in a margin they fit in."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, n)  # a report of one benchmark is one panel wide
    rows = math.ceil(n / cols)
    margin = 0.065 * max((len(label) for label in labels), default=0)  # inches of 7-point text
    width, height = (4.2, 3.2) if not labels else (3.2, max(2.0, 1.2 + 0.25 * len(labels)))
    fig, axes = plt.subplots(rows, cols, figsize=(margin + width * cols, height * rows), squeeze=False,
                             sharey=bool(labels))  # fmt: skip
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return path


def _metric(rows: Sequence[Any], bench: str, section: str, oov: Oov) -> str:
    """The axis label of a benchmark's metric."""
    found = next((s.metric for r in rows if (s := r.get(bench, section, oov)) and s.metric != "none"), "")
    return METRICS.get(found, found)


def _panels(rows: Sequence[Any], asked: Sequence[Panel], oov: Oov) -> list[Panel]:
    """The benchmarks asked for, in the report's order: every one, scored or not (an empty panel says so)."""
    return [p for p in asked if any(r.get(p[0], p[1], oov) for r in rows)]


def plot_scores(rows: Sequence[Any], path: str | Path, panels: Sequence[Panel], oov: Oov = Oov.STANDARD) -> Path:
    """One panel per benchmark asked for, one horizontal bar per set of vectors (baselines hatched, grey), each
    with its score and the items it scored (n): 44 pairs do not weigh as 321. The sets are named once a row."""
    panels = _panels(rows, panels, oov)
    labels = [row.label for row in rows]
    fig, axes = _figure(max(len(panels), 1), labels)
    axes[0].set_yticks(range(len(rows)), labels, fontsize=7)  # shared by the row's panels, named on its first
    axes[0].invert_yaxis()  # the first set on top (once: the axis is shared)
    for ax, (bench, section, title) in zip(axes, panels):
        found = [row.get(bench, section, oov) for row in rows]
        scores = [s if s is not None and not math.isnan(s.score) else None for s in found]  # None: none scored
        values = [s.score if s else 0.0 for s in scores]
        grey = [row.baseline for row in rows]
        bars = ax.barh(range(len(rows)), values, color=["#bbbbbb" if g else "#3b75af" for g in grey])
        for bar, baseline, s in zip(bars, grey, scores):
            bar.set_hatch("//" if baseline else "")
            note = f"{s.score:.2f} (n={s.n_covered:,})" if s else "none scored"
            ax.annotate(note, (max(bar.get_width(), 0), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=7)  # fmt: skip
        low, high = min(0.0, *values), max(1.0, *values)
        ax.set_xlim(low, high * 1.6)  # room for the notes; no tick there, where no score can be
        ax.set_xticks([t / 2 for t in range(math.ceil(2 * low), math.floor(2 * high) + 1)])  # inside the scores
        total = next((s.n_total for s in found if s and s.n_total), 0)
        ax.set_title(f"{title} ({total:,} items)" if total else title, fontsize=10)
        ax.set_xlabel(_metric(rows, bench, section, oov), fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    title = f"scores by benchmark (OOV policy {oov}: {oov.description}; n = items scored)"
    fig.suptitle(textwrap.fill(title, int(12 * fig.get_figwidth())), fontsize=10)  # 10-point text fits the width
    return _save(fig, Path(path))


def plot_layers(rows: Sequence[Any], path: str | Path, panels: Sequence[Panel], oov: Oov = Oov.STANDARD) -> Path:
    """Score against layer, one line per model and pooling; baselines as dashed horizontal lines."""
    from matplotlib.ticker import MaxNLocator

    panels = _panels(rows, panels, oov)
    fig, axes = _figure(max(len(panels), 1))
    series: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        if "layer" in row.meta and not row.baseline:
            series[f"{Path(str(row.meta.get('model', ''))).name} {row.meta.get('pooling', '')}".strip()].append(row)
    baselines = [r for r in rows if r.baseline or "layer" not in r.meta]
    for ax, (bench, section, title) in zip(axes, panels):
        for name, members in series.items():
            members = sorted(members, key=lambda r: r.meta["layer"])
            points = [(r.meta["layer"], s.score) for r in members if (s := r.get(bench, section, oov))]
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
        for i, row in enumerate(baselines):
            s = row.get(bench, section, oov)
            if s is not None and not math.isnan(s.score):
                ax.axhline(s.score, linestyle="--", color=f"C{len(series) + i}", label=row.label)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("layer (0: the embeddings)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(_metric(rows, bench, section, oov), fontsize=8)
    legend_rows = 0
    if panels:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8)
        legend_rows = math.ceil(len(labels) / 4)
    fig.suptitle(f"score by layer (OOV policy: {oov})", fontsize=11)
    import matplotlib.pyplot as plt

    below = (0.2 * legend_rows + 0.1) / fig.get_figheight()  # the legend's height, in inches, under the panels
    fig.tight_layout(rect=(0, below, 1, 1))
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return Path(path)
