"""Benchmark files: a registry with each file's sha256, and loaders.

A file is read from the data folder (``$DISTILL_DATA``, default ``../shared/data``) when it is there, else
from the copy the wheel ships (:data:`PACKAGED`: the benchmarks whose licences allow it, as gensim ships
WS353, SimLex-999 and the Google analogies). Every normalised file is UTF-8 TSV with one header line (see
the data folder's README.md). A file whose sha256 differs from the registry's is refused: scores on a
changed benchmark are not comparable.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from distill.corpus import normalize_text
from distill.errors import ConfigError
from distill.files import sha256_file
from distill.paths import data_dir


class Kind(str, Enum):
    SIMILARITY = "similarity"  # word pairs with human scores -> Spearman
    ANALOGY = "analogy"  # a:b :: c:d questions -> accuracy
    CATEGORIZATION = "categorization"  # word -> category -> cluster purity
    RELATIONAL = "relational"  # SemEval-2012 Task 2 -> mean Spearman over subcategories


@dataclass(frozen=True)
class Benchmark:
    """One registry entry: where the file is, what it is, its sha256."""

    name: str
    kind: Kind
    path: str  # relative to the data folder
    sha256: str
    title: str
    extra: str = ""  # a second file (SemEval prototypes)
    extra_sha256: str = ""


_S, _A, _C, _R = Kind.SIMILARITY, Kind.ANALOGY, Kind.CATEGORIZATION, Kind.RELATIONAL
REGISTRY: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("simlex999", _S, "similarity/simlex999.tsv",
                  "505c3d9baed1c5e7a3ba36e9519f41127db38bd35f7afb442f1d02ebe76733da",
                  "SimLex-999 (Hill et al. 2015)"),
        Benchmark("men", _S, "similarity/men_natural.tsv",
                  "66f7999ae4118d0a0b7aa31ab8f77df27b4c77ded748f47b9646bf31b2c479f3",
                  "MEN, natural form (Bruni et al. 2014)"),
        Benchmark("ws353", _S, "similarity/ws353_all.tsv",
                  "989786c1800bfb98fe65e534729ed699000cf76cb06ad84f477c4218ae75ecd7",
                  "WordSim-353 all (Finkelstein et al. 2002)"),
        Benchmark("ws353_sim", _S, "similarity/ws353_sim.tsv",
                  "200d09318fe4b06b38b90484ca281c94cd51d7ecbe67bf5a06b4e99b7844b52d",
                  "WordSim-353 similarity (Agirre et al. 2009)"),
        Benchmark("ws353_rel", _S, "similarity/ws353_rel.tsv",
                  "1f19149606e19d081a2f5a2c2011c5b0f5b9b6c3e20fd7e94e5cb0f3a66bac3e",
                  "WordSim-353 relatedness (Agirre et al. 2009)"),
        Benchmark("rw", _S, "similarity/rw.tsv",
                  "f6808a8acfabfc1ef0714b8e3772a62a900a683569f97e6f1975150786829431",
                  "Stanford Rare Words (Luong et al. 2013)"),
        Benchmark("mturk287", _S, "similarity/mturk287.tsv",
                  "3609f8b8daaaaac1d1668e55b2e3f2d72a33a7563d3fb3e21fc1a009dd33f5dd",
                  "MTurk-287 (Radinsky et al. 2011)"),
        Benchmark("google", _A, "analogy/google_analogy.tsv",
                  "accd72819fd6100779f385f9fa25368d74b8e6120635f3e618f599174d5a6cc1",
                  "Google analogies (Mikolov et al. 2013)"),
        Benchmark("msr", _A, "analogy/msr_analogy.tsv",
                  "297af6ec7445762d1fa61c55e6fcfcb2ee08ea06e982521ea0717ea1fab41644",
                  "MSR syntactic analogies (Mikolov et al. 2013)"),
        Benchmark("semeval2012", _R, "analogy/semeval2012_task2_gold.tsv",
                  "72f5479dd88c494011769aa94d10cefc5a447eff24690f3c2f678d9541a2c28e",
                  "SemEval-2012 Task 2 (Jurgens et al. 2012)",
                  "analogy/semeval2012_task2_prototypes.tsv",
                  "d443cc480498b99f29d9c7c60abc94ff4bbe90118d5a3880f22366e0cb3232f5"),
        Benchmark("ap", _C, "categorization/ap.tsv",
                  "ebf70d7d29d09f84b31832eff41dacc85354ebeec66bd0cfb7af4908f3fd02a4",
                  "Almuhareb-Poesio (2005)"),
        Benchmark("bless", _C, "categorization/bless.tsv",
                  "11c514274edb2913389db64f8edf503d198856d27bb5520c419add4ac1d15c3f",
                  "BLESS (Baroni & Lenci 2011)"),
        Benchmark("battig", _C, "categorization/battig.tsv",
                  "d70b01b93d2de8c6787f82827ed690eddf1b8a33dc3d2c3a161690e94e3012b7",
                  "Battig & Montague (1969)"),
        Benchmark("essli2008", _C, "categorization/essli2008.tsv",
                  "4889e2f69dedd7cb225d7a2726f2b8c63e86160bbeda53b3bc08305322deff6b",
                  "ESSLLI-2008 task 2c verbs"),
    )
}  # fmt: skip

#: The paper's Table 1 columns first, then the rest.


@dataclass(frozen=True)
class SimilarityDataset:
    """Word pairs with human scores."""

    name: str
    pairs: tuple[tuple[str, str], ...]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class AnalogyDataset:
    """Questions ``a:b :: c:d`` (``d`` is the answer) and the section of each (Google: semantic / syntactic)."""

    name: str
    questions: tuple[tuple[str, str, str, str], ...]
    sections: tuple[str, ...]


@dataclass(frozen=True)
class CategorizationDataset:
    """Words (some multi-word, as in Battig) and their gold category."""

    name: str
    words: tuple[str, ...]
    categories: tuple[str, ...]


@dataclass(frozen=True)
class RelationalDataset:
    """SemEval-2012 Task 2: per subcategory, prototype pairs and rated pairs with gold scores."""

    name: str
    prototypes: dict[str, tuple[tuple[str, str], ...]]
    pairs: dict[str, tuple[tuple[str, str], ...]]
    scores: dict[str, tuple[float, ...]]


Dataset = SimilarityDataset | AnalogyDataset | CategorizationDataset | RelationalDataset

_verified: dict[tuple[str, int, float], str] = {}

#: The folder of the benchmark files the wheel ships (``make wheel`` copies them in), by the data folder's
#: relative paths; absent in a checkout, which reads the data folder.
PACKAGED = Path(__file__).resolve().parent / "data"
#: The files shipped, each with the licence that allows it (the data folder's README.md gives the sources).
SHIPPED: dict[str, str] = {
    "similarity/simlex999.tsv": "shipped by gensim's test data",
    "similarity/men_natural.tsv": "CC BY 2.0",
    "similarity/ws353_all.tsv": "shipped by gensim's test data",
    "similarity/ws353_sim.tsv": "CC BY 4.0",
    "similarity/ws353_rel.tsv": "CC BY 4.0",
    "analogy/google_analogy.tsv": "Apache-2.0, with word2vec",
}


def find_file(relative: str) -> Path | None:
    """The data folder's file at ``relative``, else the shipped copy; None when neither is there."""
    for path in (data_dir() / relative, PACKAGED / relative):
        if path.is_file():
            return path
    return None


def available(name: str) -> bool:
    """Whether a registered benchmark's files are on this machine (data folder or shipped)."""
    bench = REGISTRY[name]
    return all(find_file(f) is not None for f in (bench.path, bench.extra) if f)


def checked_file(relative: str, expected: str) -> Path:
    """The data file at ``relative``, after checking it exists and has the registry's sha256 (once per process)."""
    path = find_file(relative)
    if path is None:
        shipped = "it ships with distill's wheel" if relative in SHIPPED else "distill does not ship it"
        raise ConfigError(
            f"benchmark file {relative} not found in the data folder {data_dir()} ({shipped}); "
            "set DISTILL_DATA to the folder that holds it"
        )
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime)
    if key not in _verified:
        _verified[key] = sha256_file(path)
    if _verified[key] != expected:
        raise ConfigError(
            f"benchmark file {path} has sha256 {_verified[key][:12]}..., not the registry's {expected[:12]}...: "
            "the file changed; restore it from the data folder's MANIFEST.tsv sources"
        )
    return path


def _rows(path: Path, n_fields: int, header: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every non-empty line after the header; fields split on tabs."""
    try:
        lines = normalize_text(path.read_text(encoding="utf-8")).splitlines()  # words as the corpus's
    except UnicodeDecodeError as err:
        raise ConfigError(f"benchmark file {path} is not UTF-8; convert it") from err
    rows = []
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < n_fields:
            raise ConfigError(f"{path}, line {line_no}: expected {header}, got {line!r}")
        rows.append((line_no, [f.strip() for f in fields]))
    if not rows:
        raise ConfigError(f"benchmark file {path} has no rows after its header line")
    return rows


def _float(path: Path, line_no: int, text: str) -> float:
    try:
        return float(text)
    except ValueError as err:
        raise ConfigError(f"{path}, line {line_no}: score {text!r} is not a number") from err


def read_similarity(path: Path, name: str) -> SimilarityDataset:
    rows = _rows(path, 3, "word1<TAB>word2<TAB>score")
    return SimilarityDataset(
        name=name,
        pairs=tuple((f[0], f[1]) for _, f in rows),
        scores=tuple(_float(path, n, f[2]) for n, f in rows),
    )


def read_analogy(path: Path, name: str) -> AnalogyDataset:
    rows = _rows(path, 5, "category<TAB>word1<TAB>word2<TAB>word3<TAB>word4")
    google = name == "google"
    sections = tuple(("syntactic" if f[0].startswith("gram") else "semantic") if google else f[0] for _, f in rows)
    return AnalogyDataset(name=name, questions=tuple(tuple(f[1:5]) for _, f in rows), sections=sections)  # type: ignore[misc]


def read_categorization(path: Path, name: str) -> CategorizationDataset:
    rows = _rows(path, 2, "word<TAB>category")
    return CategorizationDataset(name=name, words=tuple(f[0] for _, f in rows), categories=tuple(f[1] for _, f in rows))


def read_relational(gold: Path, prototypes: Path, name: str) -> RelationalDataset:
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    scores: dict[str, list[float]] = defaultdict(list)
    for n, f in _rows(gold, 7, "split<TAB>category<TAB>class<TAB>subclass<TAB>word1<TAB>word2<TAB>gold_score"):
        pairs[f[1]].append((f[4], f[5]))
        scores[f[1]].append(_float(gold, n, f[6]))
    protos: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for _, f in _rows(prototypes, 6, "split<TAB>category<TAB>class<TAB>subclass<TAB>word1<TAB>word2"):
        protos[f[1]].append((f[4], f[5]))
    missing = sorted(set(pairs) - set(protos))
    if missing:
        raise ConfigError(f"{prototypes}: no prototype pairs for subcategories {', '.join(missing)}")
    return RelationalDataset(
        name=name,
        prototypes={c: tuple(protos[c]) for c in pairs},
        pairs={c: tuple(p) for c, p in pairs.items()},
        scores={c: tuple(s) for c, s in scores.items()},
    )


def load_benchmark(name: str) -> Dataset:
    """A registered benchmark by name (``simlex999``, ``google``, ``ap`` ...), its sha256 checked."""
    if name not in REGISTRY:
        raise ConfigError(f"unknown benchmark {name!r}; use one of: {', '.join(REGISTRY)}")
    bench = REGISTRY[name]
    path = checked_file(bench.path, bench.sha256)
    if bench.kind is Kind.SIMILARITY:
        return read_similarity(path, name)
    if bench.kind is Kind.ANALOGY:
        return read_analogy(path, name)
    if bench.kind is Kind.CATEGORIZATION:
        return read_categorization(path, name)
    return read_relational(path, checked_file(bench.extra, bench.extra_sha256), name)


def load_similarity(name_or_path: str | Path) -> SimilarityDataset:
    """A similarity benchmark by registry name or the path of a ``word1<TAB>word2<TAB>score`` TSV."""
    if str(name_or_path) in REGISTRY:
        dataset = load_benchmark(str(name_or_path))
        if not isinstance(dataset, SimilarityDataset):
            raise ConfigError(f"{name_or_path} is a {REGISTRY[str(name_or_path)].kind.value} benchmark")
        return dataset
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(f"benchmark file {path} not found; give a registry name ({', '.join(REGISTRY)}) or a TSV")
    return read_similarity(path, path.stem)
