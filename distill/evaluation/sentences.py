"""Sentence similarity, what deployed static models are judged by: STS 2012-2016 (SemEval), Spearman of the
cosine against the gold scores per year, the mean over the years, and encoding speed.

Encoders: word vectors (a run folder's set or a vector file: a sentence is the mean of its words' vectors, its
words split as the model2vec / sentence-transformers exports split them), an exported model2vec or
sentence-transformers folder, or a transformer through sentence-transformers (the teacher's own pooling).
Years 2012-2014 are the dev years any choice is tuned on; 2015 and 2016 are held out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from distill.errors import ConfigError, require
from distill.evaluation.datasets import checked_file
from distill.files import read_model_json, sha256_file
from distill.paths import default_corpus, resolve_model
from distill.progress import progress_bar
from distill.vectors.keyed import l2_normalize

#: The gold pairs: ``year, split, dataset, line, score, sentence1, sentence2``; pairs without a score are skipped.
STS_FILE = ("corpus/sts/sts_2012_2016_pairs.tsv", "1a40bed1446aec3eaf5238439c5504920395ca32bfb53d414459e1f9c6aa96a4")
YEARS = (2012, 2013, 2014, 2015, 2016)
DEV_YEARS = (2012, 2013, 2014)
HELD_OUT_YEARS = (2015, 2016)

#: ``encode(sentences) -> (n, dim)`` float array.
Encode = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class StsPairs:
    """Scored sentence pairs of one or more years."""

    years: np.ndarray  # (n,) int
    first: list[str]
    second: list[str]
    scores: np.ndarray  # (n,) gold 0-5
    test: np.ndarray | None = None  # (n,) bool: in its year's test split (None: every pair is)


@dataclass
class SentenceScore:
    """STS Spearman (x100) per year, their means, and the encoder's speed."""

    label: str
    per_year: dict[int, float]  # every pair of the year with a gold score (STS12: its train and test splits)
    sentences_per_second: float
    n_pairs: int
    meta: dict[str, Any] = field(default_factory=dict)
    sts12_test: float = float("nan")  # STS12's test split alone, as MTEB scores it

    def mean(self, years: Sequence[int] = YEARS) -> float:
        """The mean over ``years`` of every pair (the all-pairs figure; dev 2012-2014 is chosen on it)."""
        return float(np.mean([self.per_year[y] for y in years]))

    def mteb(self) -> dict[str, float]:
        """The field's splits: STS12 (test split), STS13, STS14, STS15, STS16 (each year's test set)."""
        return {"STS12": self.sts12_test, **{f"STS{y % 100}": self.per_year[y] for y in YEARS[1:]}}

    def mteb_mean(self) -> float:
        """The mean of the MTEB splits, STS12-16."""
        return float(np.mean(list(self.mteb().values())))

    def mean_13_16(self) -> float:
        """The mean of STS13-16 (the same sets under either split)."""
        return self.mean(YEARS[1:])


def load_sts() -> StsPairs:
    """The STS 2012-2016 pairs with a gold score (14,778), the file's sha256 checked."""
    path = checked_file(*STS_FILE)
    years, first, second, scores, test = [], [], [], [], []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines()[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 7:
            raise ConfigError(f"{path}, line {line_no}: expected 7 tab-separated fields, found {len(fields)}")
        if not fields[4]:
            continue
        years.append(int(fields[0]))
        test.append(fields[1] == "test")
        scores.append(float(fields[4]))
        first.append(fields[5])
        second.append(fields[6])
    return StsPairs(np.array(years), first, second, np.array(scores), np.array(test))


def score_sts(encode: Encode, pairs: StsPairs, label: str, meta: dict[str, Any] | None = None) -> SentenceScore:
    """Spearman x100 of the cosine of each pair's embeddings against the gold score, per year; the speed is
    that of encoding both sides of every pair."""
    sentences = pairs.first + pairs.second
    t0 = time.perf_counter()
    embeddings = np.asarray(encode(sentences), dtype=np.float32)
    seconds = time.perf_counter() - t0
    unit = l2_normalize(embeddings)
    n = len(pairs.first)
    cosines = np.einsum("ij,ij->i", unit[:n], unit[n:])

    def spearman(mask: np.ndarray) -> float:
        return 100 * float(spearmanr(cosines[mask], pairs.scores[mask]).statistic) if mask.any() else np.nan

    per_year = {year: spearman(pairs.years == year) for year in YEARS}
    test = pairs.test if pairs.test is not None else np.ones(n, dtype=bool)
    return SentenceScore(label, per_year, len(sentences) / max(seconds, 1e-9), n, meta or {},
                         spearman((pairs.years == 2012) & test))  # fmt: skip


# -- encoders


def word_splitter(lowercase: bool) -> Callable[[list[str]], list[list[str]]]:
    """Split sentences into words as the exports' word-level tokenizer does (BERT's split on spaces and
    punctuation, lowercased for an uncased vocabulary)."""
    from tokenizers import normalizers, pre_tokenizers

    split = pre_tokenizers.BertPreTokenizer()
    lower = normalizers.Lowercase() if lowercase else None

    def words(sentences: list[str]) -> list[list[str]]:
        out = []
        for text in sentences:
            text = lower.normalize_str(text) if lower is not None else text
            out.append([w for w, _ in split.pre_tokenize_str(text)])
        return out

    return words


def mean_of_words(kv: Any, lowercase: bool | None = None) -> Encode:
    """A sentence is the mean of its known words' vectors (zero when it has none): what the model2vec and
    sentence-transformers exports compute."""
    index = kv.key_to_index
    vectors = np.asarray(kv.vectors, dtype=np.float32)
    lowercase = all(w == w.lower() for w in kv.index_to_key) if lowercase is None else lowercase
    split = word_splitter(lowercase)

    def encode(sentences: list[str]) -> np.ndarray:
        out = np.zeros((len(sentences), vectors.shape[1]), dtype=np.float32)
        for i, words in enumerate(split(sentences)):
            ids = [index[w] for w in words if w in index]
            if ids:
                out[i] = vectors[ids].mean(axis=0)
        return out

    return encode


def token_table_encoder(words: list[str], vectors: np.ndarray, lowercase: bool, pieces: Any) -> Encode:
    """What the model2vec export of ``vectors`` encodes (its tokenizer, unknown words through ``pieces``),
    built in memory."""
    from distill.serve.formats import static_model

    model = static_model(words, np.asarray(vectors, dtype=np.float32), lowercase, pieces)
    return lambda sentences: model.encode(sentences, show_progress_bar=False)


def model2vec_encoder(path: str | Path) -> Encode:
    """An exported (or any) model2vec folder, through model2vec's own loader."""
    static_model = require("model2vec", "export", "scoring a model2vec folder").StaticModel
    with _loading("model2vec", path):
        model = static_model.from_pretrained(str(path))
    return lambda sentences: model.encode(sentences, show_progress_bar=False)


def sentence_transformers_encoder(path_or_name: str | Path) -> Encode:
    """A sentence-transformers folder (an export, or a transformer such as the teacher with its own pooling)."""
    st = require("sentence_transformers", "export", "scoring a sentence-transformers model")
    if Path(path_or_name).is_dir():
        check_modules(Path(path_or_name))
    with _loading("sentence-transformers", path_or_name):
        model = st.SentenceTransformer(str(path_or_name), device="cpu", trust_remote_code=False, local_files_only=True)
    return lambda sentences: model.encode(sentences, batch_size=64, show_progress_bar=False)


def check_modules(folder: Path) -> None:
    """ConfigError unless every module a sentence-transformers folder's ``modules.json`` names is one of
    sentence-transformers' own, in a folder inside it: sentence-transformers before 6.0 imports any other class
    from a local folder's own code, and a module's path may point outside the folder."""
    path = folder / "modules.json"
    if not path.is_file():
        return
    modules = read_model_json(path)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise ConfigError(f"{path} is not a list of modules; the folder is damaged")
    for module in modules:
        kind, where = module.get("type"), module.get("path", "")
        if not isinstance(kind, str) or not kind.startswith("sentence_transformers."):
            raise ConfigError(
                f"{path} names the module {kind!r}, which is not one of sentence-transformers' own: loading it "
                "would run code from the folder, which distill never does"
            )
        parts = Path(where).parts if isinstance(where, str) else ("..",)
        if Path(str(where)).is_absolute() or ".." in parts:
            raise ConfigError(f"{path} puts a module at {where!r}, outside the folder; distill reads only inside it")


@contextlib.contextmanager
def _loading(library: str, path: str | Path) -> Iterator[None]:
    """A folder the library cannot load (damaged weights, a broken config or tokenizer) is one ConfigError: the
    libraries raise errors of their own kinds (safetensors', tokenizers', JSON's ...)."""
    try:
        yield
    except Exception as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(f"{library} cannot load {path}: {reason}") from err


def is_model2vec_folder(path: Path) -> bool:
    """A model2vec folder: its embeddings, tokenizer and a config without a transformer's architecture
    (model2vec writes a modules.json too, for sentence-transformers; model2vec's own loader is the reference)."""
    config = path / "config.json"
    if not (config.is_file() and (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()):
        return False
    data = read_model_json(config)
    return not (isinstance(data, dict) and "architectures" in data)


def is_sentence_transformers_folder(path: Path) -> bool:
    return (path / "modules.json").is_file() and not is_model2vec_folder(path)


def teacher_encoder(model: str, progress: bool = True) -> tuple[Encode, str]:
    """The source transformer as sentence-transformers loads it (its own pooling), and its label; a
    transformer takes minutes on a CPU, so it shows its progress."""
    source = resolve_model(model)
    try:
        encode = sentence_transformers_encoder(source)
    except ConfigError as err:
        raise ConfigError(f"the teacher {model!r}: {err}") from err
    return with_progress(encode, "encoding with the teacher", not progress), f"{Path(source).name} (teacher)"


def with_progress(encode: Encode, desc: str, disable: bool = False, chunk: int = 2048) -> Encode:
    """``encode`` over chunks of sentences, with a progress bar (or a line every few seconds in a log)."""

    def run(sentences: list[str]) -> np.ndarray:
        bar = progress_bar(len(sentences), desc, "sentence", disable)
        parts = []
        try:
            for start in range(0, len(sentences), chunk):
                parts.append(np.asarray(encode(sentences[start : start + chunk]), dtype=np.float32))
                bar.update(len(parts[-1]))
        finally:
            bar.close()
        return np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)

    return run


def saw_sts(manifest: dict[str, Any]) -> bool:
    """Whether a run's corpus holds the STS 2012-2016 sentences (the default corpus, by name or content): what
    is made from it saw every STS year's sentences (not their scores), so no year is held out for it."""
    sts = default_corpus()
    digest = sha256_file(sts) if sts.is_file() else None
    return any(Path(f["path"]).name == sts.name or (digest and f.get("sha256") == digest)
               for f in manifest["corpus"]["files"])  # fmt: skip


def _held_out(s: SentenceScore) -> str:
    """The held-out cell: the 2015-2016 mean, marked where the encoder's corpus held those sentences."""
    return f"{s.mean(HELD_OUT_YEARS):.1f}" + (" (seen)" if s.meta.get("saw_sts") else "")


# -- report


def sentence_markdown(scores: Sequence[SentenceScore]) -> str:
    """The sentence table: Spearman x100 on the MTEB splits and their means, then the all-pairs dev and
    held-out means, and speed."""
    lines = [
        "## Sentences: STS 2012-2016, Spearman x100 of the cosine",
        "",
        "- the MTEB splits, as the field reports them: STS12's test split (3,108 pairs), STS13-16; their mean "
        "(MTEB 12-16) and the STS13-16 mean. All pairs: STS12 with its train split too; dev years 2012-2014 "
        "(what any choice is tuned on), 2015-2016 held out, except where marked (seen): that encoder was "
        "distilled from the STS sentences themselves (not their scores); speed: sentences/s encoding both sides "
        "of every pair on this machine.",
        "",
        "| encoder | STS12 (test) | STS13 | STS14 | STS15 | STS16 | MTEB 12-16 | STS 13-16 | all pairs: dev 12-14 "
        "| held out 15-16 | 2012-16 | sentences/s |",
        "|---|" + "---:|" * 11,
    ]
    for s in scores:
        splits = " | ".join(f"{v:.1f}" for v in s.mteb().values())
        lines.append(
            f"| {s.label} | {splits} | {s.mteb_mean():.1f} | {s.mean_13_16():.1f} | {s.mean(DEV_YEARS):.1f} | "
            f"{_held_out(s)} | {s.mean():.1f} | {s.sentences_per_second:,.0f} |"
        )
    return "\n".join(lines) + "\n"


def sentence_json(scores: Sequence[SentenceScore]) -> list[dict[str, Any]]:
    return [
        {
            "label": s.label,
            "per_year": {str(y): v for y, v in s.per_year.items()},
            "mteb": s.mteb(),
            "mteb_mean": s.mteb_mean(),
            "sts13_16_mean": s.mean_13_16(),
            "dev": s.mean(DEV_YEARS),
            "held_out": None if s.meta.get("saw_sts") else s.mean(HELD_OUT_YEARS),
            "years_2015_2016": s.mean(HELD_OUT_YEARS),
            "mean": s.mean(),
            "sentences_per_second": s.sentences_per_second,
            "n_pairs": s.n_pairs,
            "meta": s.meta,
        }
        for s in scores
    ]


def score_inputs(paths: Sequence[Path], vector_set: str | None, pairs: StsPairs) -> list[SentenceScore]:
    """Score each input: a model2vec or sentence-transformers folder as its loader reads it; a run folder's sets
    as ``distill export`` bakes them (its sentence recipe); any other vector file as the plain mean."""
    from distill.rundir import RunDir, sets_of
    from distill.serve.export import prepared_set, set_pieces
    from distill.vectors.keyed import to_keyed_vectors
    from distill.vectors.reader import read_vectors

    scores = []
    for path in map(Path, paths):
        if path.is_dir() and is_model2vec_folder(path):
            scores.append(score_sts(model2vec_encoder(path), pairs, f"{path.name} (model2vec)"))
        elif path.is_dir() and is_sentence_transformers_folder(path):
            scores.append(score_sts(sentence_transformers_encoder(path), pairs, f"{path.name} (sentence-transformers)"))
        elif path.is_dir():
            run = RunDir(path)
            manifest = run.manifest()
            names = [run.resolve_set(vector_set)] if vector_set else sets_of(manifest)
            seen = saw_sts(manifest)
            for name in names:
                kv, _, recipe, ready = prepared_set(run, name)
                lowercase = bool(manifest["vocabulary"]["lowercase"])
                pieces = set_pieces(path, name)
                if pieces is not None:  # unknown words through their pieces, as the exports read them
                    encode = token_table_encoder(list(kv.index_to_key), ready, lowercase, pieces)
                else:
                    encode = mean_of_words(to_keyed_vectors(kv.index_to_key, ready), lowercase)
                label = f"{path.name} {name} ({recipe.name})"
                meta = {"set": name, "recipe": recipe.to_json(), "saw_sts": seen}
                scores.append(score_sts(encode, pairs, label, meta))
        else:
            scores.append(score_sts(mean_of_words(read_vectors(path)), pairs, path.name))
    return scores
