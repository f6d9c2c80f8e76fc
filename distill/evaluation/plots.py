"""Pictures of a report: scores per benchmark, and scores against layer with baselines as horizontal lines."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distill.files import atomic_path

PLOTTED = (
    ("simlex999", "all", "SimLex-999"),
    ("men", "all", "MEN"),
    ("ws353", "all", "WS353"),
    ("rw", "all", "RW"),
    ("google", "all", "Google (3CosAdd)"),
    ("msr", "all", "MSR (3CosAdd)"),
    ("semeval2012", "all", "SemEval-2012"),
    ("bless", "all", "BLESS"),
    ("ap", "all", "AP"),
)


def _figure(n: int) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 3
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
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


def _panels(rows: Sequence[Any]) -> list[tuple[str, str, str]]:
    return [p for p in PLOTTED if any((s := r.get(p[0], p[1])) and not math.isnan(s.score) for r in rows)]


def plot_scores(rows: Sequence[Any], path: str | Path, oov: str = "standard") -> Path:
    """One panel per benchmark, one horizontal bar per set of vectors (baselines hatched)."""
    panels = _panels(rows)
    fig, axes = _figure(max(len(panels), 1))
    for ax, (bench, section, title) in zip(axes, panels):
        labels, values, hatches = [], [], []
        for row in rows:
            s = row.get(bench, section, oov)
            labels.append(row.label)
            values.append(0.0 if s is None or math.isnan(s.score) else s.score)
            hatches.append("//" if row.baseline else "")
        bars = ax.barh(range(len(rows)), values, color=["#bbbbbb" if h else "#3b75af" for h in hatches])
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
    fig.suptitle(f"scores (OOV policy: {oov})", fontsize=11)
    return _save(fig, Path(path))


def plot_layers(rows: Sequence[Any], path: str | Path, oov: str = "standard") -> Path:
    """Score against layer, one line per model and pooling; baselines as dashed horizontal lines."""
    panels = _panels(rows)
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
        ax.set_xlabel("layer")
    if panels:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8)
        fig.subplots_adjust(bottom=0.12)
    fig.suptitle(f"score by layer (OOV policy: {oov})", fontsize=11)
    import matplotlib.pyplot as plt

    fig.tight_layout(rect=(0, 0.08, 1, 1))
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return Path(path)
