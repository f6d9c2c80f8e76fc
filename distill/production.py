"""The production model of ``distill model``: a run's recommended set, tuned toward its teacher, exported as
model2vec and sentence-transformers folders with a model card (teacher, corpus, recipe, scores, speed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from distill.config import Oov
from distill.errors import ConfigError
from distill.evaluation.report import EvalOptions, score_vectors
from distill.evaluation.sentences import (
    DEV_YEARS,
    HELD_OUT_YEARS,
    SentenceScore,
    load_sts,
    model2vec_encoder,
    saw_sts,
    score_sts,
)
from distill.files import check_replaceable, list_folder, write_json, write_text
from distill.rundir import RunDir
from distill.serve.card import WORD_BENCHMARKS as CARD_NAMES
from distill.serve.card import Score, card_text, reshaped
from distill.serve.export import export_run
from distill.serve.formats import EXPORT_INFO, Format
from distill.workdir import WorkDir

WORD_BENCHMARKS = ("simlex999", "men", "ws353")


def word_scores(run: RunDir, name: str) -> dict[str, dict[str, float]]:
    """Spearman and pairs covered of a set on the dev word-similarity benchmarks, scored as ``distill evaluate``
    scores them (pairs with a word the set lacks skipped)."""
    scores = score_vectors(run.load(name), EvalOptions(WORD_BENCHMARKS, oov=(Oov.STANDARD,)))
    return {s.benchmark: {"spearman": s.score, "covered": s.n_covered, "pairs": s.n_total}
            for s in scores if s.section == "all"}  # fmt: skip


def _years(manifest: dict[str, Any]) -> tuple[str, str, str]:
    """The STS table's title and its two year columns: held out only where the model never saw the sentences."""
    if saw_sts(manifest):
        return ("## STS 2012-2016 (Spearman x100 of the cosine; MTEB: STS12's test split and STS13-16; the "
                "corpus was the STS sentences themselves, without their scores: no year is held out)",
                "12-14", "15-16")  # fmt: skip
    return (
        "## STS 2012-2016 (Spearman x100 of the cosine; MTEB: STS12's test split and STS13-16; all pairs: "
        "2012-2014 dev, 2015-2016 held out)",
        "dev 12-14",
        "held out 15-16",
    )


def model_card(
    manifest: dict[str, Any],
    exported: str,
    scores: list[SentenceScore],
    words: dict[str, Any],
    library: Format,
    model_id: str,
    stored: dict[str, Any] | None = None,
) -> str:
    """README.md of an exported folder: the Hub's metadata with the model's scores, and the two tables;
    ``stored``: the folder's ``export.json`` (the sets' word scores stay out of the metadata of a folder that
    ``--dims`` or ``--top-words`` reshaped)."""
    lines = []
    if scores:
        title, dev, held = _years(manifest)
        lines += [title, "", f"| encoder | MTEB 12-16 | STS 13-16 | {dev} | {held} | 2012-16 | sentences/s |",
                  "|---|" + "---:|" * 6]  # fmt: skip
    for s in scores:
        lines.append(f"| {s.label} | {s.mteb_mean():.1f} | {s.mean_13_16():.1f} | {s.mean(DEV_YEARS):.1f} | "
                     f"{s.mean(HELD_OUT_YEARS):.1f} | {s.mean():.1f} | {s.sentences_per_second:,.0f} |")  # fmt: skip
    if words:
        lines += ["", "## Words (Spearman x100, pairs covered)", "",
                  "| set | " + " | ".join(CARD_NAMES[b] for b in WORD_BENCHMARKS) + " |",
                  "|---|" + "---:|" * len(WORD_BENCHMARKS)]  # fmt: skip
    for name, by_bench in words.items():
        cells = " | ".join(f"{100 * by_bench[b]['spearman']:.1f} ({by_bench[b]['covered']:,})" for b in WORD_BENCHMARKS)
        lines.append(f"| {name} | {cells} |")
    mteb = scores[0].mteb() if scores else {}
    results = [Score("STS", f"mteb/{name.lower()}-sts", f"MTEB {name}", value, "test split", "cosine_spearman", "test")
               for name, value in mteb.items()]  # fmt: skip
    if reshaped(stored):  # the word scores are the sets' as distilled, not this folder's
        lines += ["", "(The sets as distilled, before the export's `--dims` or `--top-words`.)"]
    else:
        results += [Score("word-similarity", b, CARD_NAMES[b], 100 * v["spearman"],
                          f"{v['covered']:,} of {v['pairs']:,} pairs") for b, v in words[exported].items()]  # fmt: skip
    return card_text(manifest, exported, library.value, model_id, results, ["\n".join(lines)], stored)


#: The folders of the production model inside its run folder, by format.
FOLDERS = ((Format.MODEL2VEC, "model2vec"), (Format.SENTENCE_TRANSFORMERS, "st"))


def check_model(out: Path, dims: int | None, model_config: Any) -> None:
    """What would stop the export after the run, checked before it: ``--dims`` against the teacher's width, and
    folders in the way of the exports (a user's files in ``OUT/model2vec`` or ``OUT/st``)."""
    width = getattr(model_config, "hidden_size", None)
    if dims is not None and isinstance(width, int) and dims > width:
        raise ConfigError(f"--dims {dims} is more than the teacher's {width} dimensions: give at most {width}")
    for _, name in FOLDERS:
        check_replaceable(out / name, ConfigError, "export")


def _export(
    run: RunDir, name: str, fmt: Format, folder: str, dtype: str, dims: int | None, top_words: int | None
) -> Path:
    """Set ``name`` exported as ``fmt`` into the run's ``folder`` (replacing an earlier export there)."""
    (path, _), *_ = export_run(run.path, vector_set=name, formats=[fmt], out=run.path / folder, dtype=dtype,
                               dims=dims, top_words=top_words)  # fmt: skip
    return path  # listed in the run's manifest by export_run


def build_model(
    result: Any,
    tune_epochs: int,
    progress: bool,
    dtype: str = "float32",
    dims: int | None = None,
    top_words: int | None = None,
    device: str = "cpu",
    checkpoint: Path | None = None,
) -> tuple[list[Path], list[str]]:
    """Tune (if ``tune_epochs``, on ``device``) and keep the tuned set only where it helps: each set is exported
    as model2vec made as small as ``dtype``, ``dims`` and ``top_words`` ask and scored as its loader reads it,
    and the higher STS mean on the dev years (2012-2014) is kept. Export the sentence-transformers folder too
    (it stays float32), write the card; returns the folders and a summary. ``checkpoint``: where a tuning
    stopped part way goes on from (``tune_run``'s)."""
    from distill.tune.options import TuneOptions
    from distill.tune.train import tune_run

    run = RunDir(result.out)
    candidates = [result.manifest["best"]]
    if tune_epochs:
        tuned, _, _ = tune_run(
            run.path,
            candidates[0],
            options=TuneOptions(epochs=tune_epochs),
            progress=progress,
            device=device,
            checkpoint=checkpoint,
        )
        candidates.append(tuned)
    pairs = load_sts()
    sts = {}
    for name in candidates:  # as exported: a set that loses more to the sizes asked can lose the choice
        path = _export(run, name, *FOLDERS[0], dtype, dims, top_words)
        sts[name] = score_sts(model2vec_encoder(path), pairs, f"{name} (model2vec export)")
    exported = max(candidates, key=lambda name: sts[name].mean(DEV_YEARS))
    if exported != candidates[-1]:  # the folder holds the last one exported
        _export(run, exported, *FOLDERS[0], dtype, dims, top_words)
    folders = [run.path / FOLDERS[0][1], _export(run, exported, *FOLDERS[1], dtype, dims, top_words)]
    scores = [sts[exported], *(sts[name] for name in candidates if name != exported)]
    words = {name: word_scores(run, name) for name in candidates}
    manifest = run.manifest()
    for folder, (fmt, _) in zip(folders, FOLDERS, strict=True):
        model_id = f"{run.path.name}-{folder.name}"  # the run folder's name and the format's
        stored = json.loads((folder / EXPORT_INFO).read_text(encoding="utf-8"))
        write_text(model_card(manifest, exported, scores, words, fmt, model_id, stored), folder / "README.md")
        write_json({"exported": exported, "chosen_on": "STS 2012-2014", "words": words,
                    "sts": [{"label": s.label, "per_year": s.per_year, "mean": s.mean(), "mteb": s.mteb(),
                             "mteb_mean": s.mteb_mean(), "sts13_16_mean": s.mean_13_16()} for s in scores]},
                   folder / "scores.json")  # fmt: skip
        list_folder(folder)
    held = "2015-16, seen in tuning" if saw_sts(manifest) else "held out"
    summary = [
        f"{s.label}: STS MTEB 12-16 {s.mteb_mean():.1f}, 13-16 {s.mean_13_16():.1f}; all pairs {s.mean():.1f} "
        f"(dev {s.mean(DEV_YEARS):.1f}, {held} {s.mean(HELD_OUT_YEARS):.1f}), "
        f"{s.sentences_per_second:,.0f} sentences/s"
        for s in scores
    ]
    return folders, [f"exported {exported} (the better export on the dev years, STS 2012-2014)", *summary]


def model_step(
    tune_epochs: int, progress: bool, dtype: str, dims: int | None, top_words: int | None, device: str
) -> Callable[[Any], tuple[list[Path], list[str]]]:
    """``distill model``'s step after the run (:func:`build_model`); a tuning stopped part way goes on from its
    checkpoint in the run's work folder, which a run found up to date has not: its tuning starts afresh."""

    def step(result: Any) -> tuple[list[Path], list[str]]:
        checkpoint = None if result.reused else WorkDir(result.out).tuning
        return build_model(result, tune_epochs, progress, dtype, dims, top_words, device, checkpoint)

    return step
