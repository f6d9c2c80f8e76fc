"""Benchmark files of ../shared/data (or $DISTILL_DATA): TSV with one header line -> records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from distill.config import ConfigError, data_dir

#: name -> path under the data folder
SIMILARITY_FILES = {
    "simlex999": "similarity/simlex999.tsv",
    "men": "similarity/men_natural.tsv",
    "ws353": "similarity/ws353_all.tsv",
    "ws353_sim": "similarity/ws353_sim.tsv",
    "ws353_rel": "similarity/ws353_rel.tsv",
    "rw": "similarity/rw.tsv",
    "mturk287": "similarity/mturk287.tsv",
}


@dataclass(frozen=True)
class SimilarityDataset:
    """Word pairs with human scores."""

    name: str
    pairs: tuple[tuple[str, str], ...]
    scores: tuple[float, ...]


def load_similarity(name_or_path: str | Path) -> SimilarityDataset:
    """A similarity benchmark by name (``simlex999``, ``men``, ``ws353`` ...) or TSV path."""
    if str(name_or_path) in SIMILARITY_FILES:
        name = str(name_or_path)
        path = data_dir() / SIMILARITY_FILES[name]
    else:
        path = Path(name_or_path)
        name = path.stem
    if not path.is_file():
        raise ConfigError(f"benchmark file {path} not found; set DISTILL_DATA to the folder holding similarity/")
    pairs, scores = [], []
    lines = path.read_text(encoding="utf-8").splitlines()
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            pairs.append((fields[0], fields[1]))
            scores.append(float(fields[2]))
        except (IndexError, ValueError) as err:
            raise ConfigError(f"{path}, line {line_no}: expected word1<TAB>word2<TAB>score, got {line!r}") from err
    return SimilarityDataset(name=name, pairs=tuple(pairs), scores=tuple(scores))
