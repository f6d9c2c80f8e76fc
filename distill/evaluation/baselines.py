"""Same-corpus baselines: FastText and Word2Vec (gensim) and GloVe (distill.glove), trained on the words
of a distillation's vocabulary with the same tokenisation, written as word2vec text files."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import EncodingErrors
from distill.corpus import WORD_RE, CorpusStats, build_vocabulary, count_words, fold, iter_lines, read_word_list
from distill.errors import ConfigError
from distill.files import check_writable, member, write_json
from distill.names import BASELINES, VOCAB
from distill.paths import slug
from distill.rundir import check_own_folder, listed_files
from distill.vectors.keyed import to_keyed_vectors, write_word2vec

logger = logging.getLogger(__name__)


class Method(str, Enum):
    FASTTEXT = "fasttext"
    WORD2VEC = "word2vec"
    GLOVE = "glove"


@dataclass(frozen=True)
class BaselineConfig:
    """Options of ``distill baselines``; defaults as the published models where the corpus allows."""

    corpus: tuple[str, ...]
    out: Path | None = None
    methods: tuple[Method, ...] = (Method.FASTTEXT, Method.WORD2VEC, Method.GLOVE)
    vocab: str | None = None  # a run folder, its vocab.tsv, or a word list: train on exactly these words
    lowercase: bool | None = None  # None: lowercase when the given vocabulary is all lower case, else True
    min_count: int = 5  # without a vocabulary: words seen at least this often
    dim: int = 300
    window: int = 5  # FastText / Word2Vec (GloVe uses glove_window)
    glove_window: int = 10
    epochs: int = 10  # FastText / Word2Vec
    glove_epochs: int = 25
    workers: int = 2  # gensim threads; 1 makes FastText / Word2Vec deterministic
    seed: int = 0
    progress: bool = True
    encoding_errors: EncodingErrors = EncodingErrors.STRICT


@dataclass
class BaselineResult:
    out: Path
    files: dict[str, Path] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def read_vocab(source: str) -> list[str]:
    """Words of a run folder's ``vocab.tsv``, a ``vocab.tsv`` or a word list (first column), in order."""
    path = Path(source)
    if path.is_dir():
        path = path / VOCAB
    if not path.is_file():
        raise ConfigError(f"vocabulary {path} not found; give a distill run folder, its vocab.tsv or a word list")
    return read_word_list(path, lowercase=False)  # UTF-8 checked, a byte-order mark dropped, NFC as the corpus


def _sentences(config: BaselineConfig, index: dict[str, int], lowercase: bool, stats: CorpusStats) -> list[np.ndarray]:
    out = []
    for line in iter_lines(config.corpus, config.encoding_errors, stats, outputs_of=listed_files):
        ids = [i for w in WORD_RE.findall(line) if (i := index.get(fold(w, lowercase), -1)) >= 0]
        if len(ids) > 1:
            out.append(np.array(ids, dtype=np.int32))
    return out


def _train_gensim(method: Method, sentences: list[list[str]], config: BaselineConfig) -> Any:
    from gensim.models import FastText, Word2Vec

    cls = FastText if method is Method.FASTTEXT else Word2Vec
    model = cls(
        vector_size=config.dim,
        window=config.window,
        min_count=1,  # the vocabulary is already chosen
        sg=1,  # skip-gram, as the published FastText and word2vec vectors
        epochs=config.epochs,
        workers=config.workers,
        seed=config.seed,
    )
    model.build_vocab(corpus_iterable=sentences)
    model.train(corpus_iterable=sentences, total_examples=len(sentences), epochs=config.epochs)
    return model.wv


def training_words(config: BaselineConfig) -> tuple[list[str], bool]:
    """The words the baselines are trained on (the given vocabulary, case-folded, or the corpus's words seen
    ``min_count`` times) and whether they are lowercased."""
    if config.vocab:
        words = read_vocab(config.vocab)
        lowercase = all(w == w.lower() for w in words) if config.lowercase is None else config.lowercase
        return list(dict.fromkeys(fold(w, lowercase) for w in words)), lowercase
    lowercase = True if config.lowercase is None else config.lowercase
    counts = count_words(iter_lines(config.corpus, config.encoding_errors, outputs_of=listed_files), lowercase)
    return list(build_vocabulary(counts, lowercase=lowercase, min_count=config.min_count).words), lowercase


def words_digest(words: Sequence[str]) -> str:
    """The sha256 of a word list: what baselines trained on exactly these words record, to be reused by."""
    return hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()


def _corpus_digests(files: Sequence[dict[str, Any]]) -> list[Any]:
    return [f.get("sha256") for f in files]


def method_file(method: Method) -> str:
    return f"{method.value}.vec.txt"


def method_params(method: Method, config: BaselineConfig) -> dict[str, Any]:
    """Every option that shapes ``method``'s vectors, as ``baselines.json`` records them."""
    if method is Method.GLOVE:
        from distill.evaluation.glove import GloveOptions

        options = GloveOptions(dim=config.dim, window=config.glove_window, epochs=config.glove_epochs, seed=config.seed)
        return asdict(options)
    return {
        "dim": config.dim,
        "window": config.window,
        "epochs": config.epochs,
        "sg": 1,  # skip-gram, as the published FastText and word2vec vectors
        "workers": config.workers,
        "seed": config.seed,
    }


def reusable_baselines(
    out: Path, config: BaselineConfig, words: Sequence[str], corpus: Sequence[dict[str, Any]]
) -> bool:
    """Whether ``out`` holds every method of ``config`` trained on exactly ``words`` and a corpus of these
    contents (``corpus``: files with their sha256), with every option of ``config`` that shapes the vectors."""
    try:
        data = json.loads(member(out, BASELINES).read_text(encoding="utf-8"))
        records, built = data["files"], data["built_from"]
        return (
            built["words_sha256"] == words_digest(words)
            and built["corpus_sha256"] == _corpus_digests(corpus)
            and all(records[method_file(m)]["params"] == method_params(m, config) for m in config.methods)
            and all((out / method_file(m)).is_file() for m in config.methods)
        )
    except (OSError, ValueError, KeyError, TypeError, ConfigError):
        return False


def _check_folder(out: Path, methods: Sequence[Method]) -> None:
    """Refuse, before anything is written, a folder that is not one of baselines: a run, an export, or files of the
    methods' names that no ``baselines.json`` lists (a user's, which training would replace)."""
    check_own_folder(out, "baselines")
    if member(out, BASELINES).is_file():  # never read through a link
        return
    for path in (out / method_file(m) for m in methods):
        if path.exists() or path.is_symlink():
            raise ConfigError(
                f"{path} was not written by distill baselines (no {BASELINES} lists it); choose another --out"
            )


def _kept_records(out: Path, methods: Sequence[Method], built_from: dict[str, Any]) -> dict[str, Any]:
    """The records of ``out``'s earlier baselines still true after this training (other methods, trained on the same
    words and corpus). The files of the rest are removed: they would describe words or a corpus that
    ``baselines.json`` no longer names. Only the methods' own names are touched, whatever a damaged or crafted
    record lists."""
    try:
        old = json.loads((out / BASELINES).read_text(encoding="utf-8"))
        records = dict(old["files"]) if old.get("built_from") == built_from else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        records = {}  # no record, or a damaged one: its methods are trained again when asked for
    kept = {method_file(m): records[method_file(m)] for m in Method if m not in methods and method_file(m) in records}
    for path in (out / method_file(m) for m in Method):
        if path.name not in kept and (path.is_file() or path.is_symlink()):
            path.unlink()
    return kept


def train_baselines(config: BaselineConfig) -> BaselineResult:
    """Train each method on ``config.corpus``; write ``<method>.vec.txt`` and ``baselines.json`` to ``out``.

    ``baselines.json`` lists only finished files that match it: it is written before the training with the records
    still true, and again after it."""
    from distill.evaluation.glove import GloveOptions, cooccurrence, train_glove

    if not config.corpus:
        raise ConfigError("give the corpus to train the baselines on: --corpus FILE")
    out = Path(config.out or Path("outputs") / f"baselines-{slug(Path(config.corpus[0]).name)}")
    _check_folder(out, config.methods)
    check_writable(out)
    stats = CorpusStats()
    words, lowercase = training_words(config)
    index = {w: i for i, w in enumerate(words)}
    t0 = time.perf_counter()
    sentences = _sentences(config, index, lowercase, stats)
    counts_arr = np.bincount(np.concatenate(sentences), minlength=len(words)) if sentences else np.zeros(len(words))
    seen = counts_arr > 0
    if not seen.any():
        raise ConfigError("no word of the vocabulary occurs in the corpus; check the casing of both")
    order = np.argsort(-counts_arr[seen], kind="stable")  # files list words by descending count
    kept = np.flatnonzero(seen)[order]
    kept_words = [words[i] for i in kept]
    result = BaselineResult(out=out, seconds={"read_corpus": time.perf_counter() - t0})
    built_from = {"words_sha256": words_digest(words), "corpus_sha256": _corpus_digests(stats.files)}
    manifest = {
        "built_from": built_from,
        "corpus": [Path(str(f["path"])).name for f in stats.files],
        "corpus_files": stats.files,
        "words": int(counts_arr.sum()),
        "sentences": len(sentences),
        "vocabulary": {
            "source": config.vocab or f"min_count={config.min_count}",
            "size": len(kept_words),
            "lowercase": lowercase,
            "not_in_corpus": int((~seen).sum()),
        },
    }
    records = manifest["files"] = _kept_records(out, config.methods, built_from)
    write_json(manifest, out / BASELINES)
    for method in config.methods:
        t0 = time.perf_counter()
        logger.info("training %s on %d sentences, %d words", method.value, len(sentences), len(kept_words))
        params = method_params(method, config)
        if method is Method.GLOVE:
            options = GloveOptions(**params)
            fit = train_glove(cooccurrence(sentences, len(words), options.window).tocoo(), options, config.progress)
            matrix = fit.vectors[kept]
        else:
            wv = _train_gensim(method, [[words[i] for i in s] for s in sentences], config)
            matrix = np.vstack([wv[w] for w in kept_words])
        seconds = time.perf_counter() - t0
        name = method_file(method)
        write_word2vec(to_keyed_vectors(kept_words, matrix.astype(np.float32), counts_arr[kept]), out / name)
        result.files[method.value] = out / name
        result.seconds[method.value] = seconds
        records[name] = {"method": method.value, "train_seconds": round(seconds, 2), "params": params}
        logger.info("%s: %.1f s", method.value, seconds)
    write_json(manifest, out / BASELINES)
    return result


def describe(result: BaselineResult) -> str:
    manifest = json.loads((result.out / BASELINES).read_text())
    lines = [f"{result.out}: {manifest['vocabulary']['size']} words, {manifest['words']:,} tokens"]
    lines += [f"  {m}: {result.seconds[m]:.1f} s -> {p}" for m, p in result.files.items()]
    return "\n".join(lines)


def parse_methods(text: str | Sequence[str]) -> tuple[Method, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    allowed = [m.value for m in Method]
    out = []
    for item in (i.strip() for i in items):
        if item not in allowed:
            raise ConfigError(f"unknown baseline {item!r}; use one of: {', '.join(allowed)}")
        out.append(Method(item))
    return tuple(dict.fromkeys(out))
