"""Model cards of the folder exports: YAML metadata that the Hub and ``huggingface_hub.ModelCard`` read
(library, teacher, licence, tags, scores as ``model-index``) above a body that says what the folder is.

Every card names the model by the folder's own name (or its hub repository), never by a temporary name,
and the teacher by its hub id where distill knows it, never by a local path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from distill.names import REPORT_DATA
from distill.paths import HUB_ID, HUB_IDS, MODEL_ALIASES

#: The card's ``library_name`` and the tags the Hub lists such models under, by export format.
LIBRARIES = {
    "model2vec": ("model2vec", ["model2vec", "embeddings", "static-embeddings", "distill"]),
    "sentence-transformers": (
        "sentence-transformers",
        ["sentence-transformers", "sentence-similarity", "feature-extraction", "static-embeddings", "distill"],
    ),
}
HOMEPAGE = "https://pypi.org/project/distill/"
#: Word benchmarks a card reports, with their names on the Hub.
WORD_BENCHMARKS = {"simlex999": "SimLex-999", "men": "MEN", "ws353": "WordSim-353", "rw": "Stanford Rare Words"}


class Score(NamedTuple):
    """One result of the card's ``model-index``: Spearman x100 on a benchmark."""

    task: str  # "word-similarity" or "sentence-similarity"
    dataset: str  # its id, e.g. "simlex999"
    name: str  # its title
    value: float  # Spearman x100
    scored: str = ""  # the items scored, e.g. "1,898 of 2,034 pairs"
    metric: str = "spearman"  # MTEB's STS metric is "cosine_spearman"
    split: str | None = None  # the dataset's split, e.g. "test"


def teacher_hub_id(manifest: dict[str, Any]) -> str | None:
    """The teacher's hub id: what an alias names, or the model as given unless it was a local path."""
    given = str(manifest["config"].get("model") or manifest["model"]["name"])
    if given in HUB_IDS:
        return HUB_IDS[given]
    hub = MODEL_ALIASES.get(given, given)
    looks_local = hub.startswith((".", "/", "~")) or Path(hub).exists() or hub.count("/") > 1
    return None if looks_local or not re.fullmatch(HUB_ID + r"|[A-Za-z0-9][\w.-]*", hub) else hub


def teacher_license(manifest: dict[str, Any]) -> str | None:
    """The licence the teacher's own card gives (a local folder's README.md), None when unknown."""
    from huggingface_hub import ModelCard

    readme = Path(str(manifest["model"]["source"])) / "README.md"
    if not readme.is_file():
        return None
    try:
        return ModelCard.load(readme).data.license
    except Exception:  # a README without YAML metadata, or with broken metadata: licence unknown
        return None


def run_word_scores(run_dir: Path, name: str) -> list[Score]:
    """The set's word-similarity scores in the run folder's last ``distill evaluate`` report (pairs with a
    missing word skipped), if that report scored it."""
    report = run_dir / REPORT_DATA
    if not report.is_file():
        return []
    try:
        rows = json.loads(report.read_text(encoding="utf-8"))["rows"]
    except (ValueError, KeyError):
        return []
    for row in rows:
        if row.get("meta", {}).get("set") == name and not row.get("baseline"):
            return [
                Score(
                    "word-similarity",
                    s["benchmark"],
                    WORD_BENCHMARKS[s["benchmark"]],
                    100 * s["score"],
                    f"{s['n_covered']:,} of {s['n_total']:,} pairs (the rest have a word not in the vocabulary)",
                )
                for s in row["scores"]
                if s["benchmark"] in WORD_BENCHMARKS
                and s["oov"] == "standard"
                and s["score"] is not None
                and s["score"] == s["score"]
            ]
    return []


def card_text(
    manifest: dict[str, Any],
    set_name: str,
    library: str,
    model_id: str,
    scores: Sequence[Score] = (),
    sections: Sequence[str] = (),
    stored: dict[str, Any] | None = None,
) -> str:
    """The README.md of an export folder in ``library``'s format, named ``model_id``; ``stored``: the export's
    ``export.json`` (its dtype, dimensions and words kept)."""
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    library_name, tags = LIBRARIES[library]
    teacher = teacher_hub_id(manifest)
    licence = teacher_license(manifest)
    data = ModelCardData(
        model_name=model_id,
        library_name=library_name,
        base_model=teacher,
        license=licence or "other",
        license_name=None if licence else "teacher-licence",
        license_link=None if licence else (f"https://huggingface.co/{teacher}" if teacher else HOMEPAGE),
        language="en",
        tags=tags,
        pipeline_tag="sentence-similarity",
        eval_results=[
            EvalResult(task_type=s.task, dataset_type=s.dataset, dataset_name=s.name, metric_type=s.metric,
                       metric_value=round(s.value, 2), dataset_split=s.split)
            for s in scores
        ] or None,
    )  # fmt: skip
    about = [*_about(manifest, set_name, teacher), *_stored(stored or {}, library)]
    body = [f"# {model_id}", "", *about, "", *_usage(library, model_id)]
    for section in sections:
        body += ["", section]
    if scores:
        body += ["", "## Scores (Spearman x100)", "", "| benchmark | score | scored |", "|---|---:|---|"]
        body += [f"| {s.name} | {s.value:.1f} | {s.scored} |" for s in scores]
    card = ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body) + "\n")
    return str(card)


def _about(manifest: dict[str, Any], set_name: str, teacher: str | None) -> list[str]:
    """What the model is and how it was made."""
    corpus = ", ".join(Path(f["path"]).name for f in manifest["corpus"]["files"])
    model = manifest["model"]
    name = teacher or Path(str(model["source"])).name
    link = f"[{name}](https://huggingface.co/{name})" if teacher else name
    return [
        f"Static embeddings distilled from {link} by [distill]({HOMEPAGE}): one vector per word, read from the "
        "contextual model's hidden states (Ethayarajh 2019); a sentence is the mean of its words' vectors, with "
        "no transformer at inference.",
        "",
        f"- teacher: {name} ({model['n_layers']} layers, {model['hidden_size']} dimensions)",
        f"- corpus: {corpus} ({manifest['corpus']['words']:,} words, {manifest['corpus']['lines']:,} "
        + ("sentences)" if manifest["config"].get("split_sentences") else "lines)"),
        _vocabulary(manifest, set_name),
        f"- vector set: `{set_name}`"
        + _tuning(manifest.get("derived", {}).get(set_name, {}), bool(manifest["config"].get("teacher_texts"))),
    ]


def reshaped(stored: dict[str, Any] | None) -> bool:
    """Whether an export (its ``export.json``) changed the set's vectors beyond rounding (``--dims``,
    ``--top-words``): the run's scores of the set are then not the folder's."""
    return bool(stored and (stored.get("dims") or stored.get("top_words")))


def _stored(info: dict[str, Any], library: str) -> list[str]:
    """How an export made the set smaller, from its ``export.json``: nothing when it keeps it whole in float32."""
    dtype = info.get("dtype", "float32")
    rounded = "int8, one scale for the table" if dtype == "int8" else dtype
    parts = [] if dtype == "float32" else [rounded if library == "model2vec" else f"float32 rounded to {dtype}"]
    if info.get("dims"):
        share = info["pca_explained_variance"]
        parts.append(f"{info['dims']} dimensions (PCA of the vocabulary, {share:.0%} of its variance)")
    if info.get("top_words"):
        parts.append(f"its {info['words']:,} most frequent words")
    return ["- stored: " + "; ".join(parts)] if parts else []


def _vocabulary(manifest: dict[str, Any], set_name: str) -> str:
    """The set's words and where they came from: the corpus, the teacher's whole words and the language's
    frequent words (the last two read alone)."""
    vocabulary, derived = manifest["vocabulary"], manifest.get("derived", {})
    record = derived.get(set_name, {})
    record = derived.get(record.get("tuned_from") or "", record)  # a tuned set has its source's words
    model_words, added = int(vocabulary.get("from_model_vocabulary") or 0), int(record.get("words_added") or 0)
    line = (
        f"- vocabulary: {vocabulary['size'] + added:,} words ({'lowercased' if vocabulary['lowercase'] else 'cased'})"
    )
    parts = [f"{model_words:,} of the teacher's whole words"] if model_words else []
    parts += [f"{added:,} of the language's frequent words"] if added else []
    if not parts:
        return line
    return f"{line}: {vocabulary['size'] - model_words:,} from the corpus, " + " and ".join(parts) + ", read alone"


def _tuning(derived: dict[str, Any], texts: bool) -> str:
    """How a set tuned toward the teacher was made ("" for any other set); ``texts``: the run read
    ``--teacher-texts`` beside its corpus."""
    if not derived.get("tuned_from"):
        return ""
    shared = ", every row through one shared linear map" if derived["options"].get("shared_map") else ""
    bags = derived.get("bags", 0)
    kind = "sentences of the corpus and a text file" if texts else "corpus sentences"
    also = f" and {bags:,} bags of the language's frequent words" if bags else ""
    return (f", tuned from `{derived['tuned_from']}` toward the teacher's sentence embeddings of "
            f"{derived['sentences'] - bags:,} {kind}{also}{shared} (best epoch {derived['best_epoch']}, "
            f"{derived['options'].get('blend', 1):g} of the change kept)")  # fmt: skip


def _usage(library: str, model_id: str) -> list[str]:
    """How the folder's own library loads it (by this folder's path, or by the repository id on the Hub)."""
    if library == "model2vec":
        code = f'from model2vec import StaticModel\n\nmodel = StaticModel.from_pretrained("{model_id}")'
    else:
        code = f'from sentence_transformers import SentenceTransformer\n\nmodel = SentenceTransformer("{model_id}")'
    return [
        "## Use",
        "",
        "```python",
        code,
        'embeddings = model.encode(["It is a sunny day.", "The sun is shining."])',
        "```",
    ]


def renamed(card: str, old_id: str, new_id: str) -> str:
    """The card with the model's name (title, metadata, usage) changed from ``old_id`` to ``new_id``."""
    from huggingface_hub import ModelCard

    parsed = ModelCard(card)
    parsed.data.model_name = new_id  # type: ignore[attr-defined]  # a ModelCard's data is a ModelCardData
    text = parsed.text.replace(f"# {old_id}\n", f"# {new_id}\n", 1).replace(f'"{old_id}"', f'"{new_id}"')
    return str(ModelCard(f"---\n{parsed.data.to_yaml()}\n---\n{text}"))
