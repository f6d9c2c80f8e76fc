"""The formats services load vectors in: gensim ``.kv``, model2vec, sentence-transformers, ``.npy`` + vocab.

Every format is written into a temporary folder or file next to its destination and renamed when
complete. ``read_npy`` reads the ``npy`` export back (dequantizing int8). The optional packages a
format needs are named by the extra that installs them (``pip install "distill[export]"``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import DType
from distill.errors import ConfigError, OutputError, require
from distill.files import LISTING, atomic_dir, atomic_path, write_json
from distill.names import VOCAB
from distill.rundir import read_vocab_counts, write_vocab
from distill.serve.compress import Quantized, Scale, quantize
from distill.vectors.keyed import to_keyed_vectors, write_word2vec

UNK = "[UNK]"

logger = logging.getLogger(__name__)


class Format(str, Enum):
    WORD2VEC = "word2vec"  # .txt and .bin
    KV = "kv"  # gensim native, memory-mappable
    MODEL2VEC = "model2vec"  # StaticModel.from_pretrained(folder)
    SENTENCE_TRANSFORMERS = "sentence-transformers"  # SentenceTransformer(folder)
    NPY = "npy"  # vectors.npy (+ scale.npy) + vocab.tsv
    PROJECTOR = "projector"  # vectors.tsv + metadata.tsv: TensorBoard's and the web Embedding Projector


#: What every folder export holds beside the format's own files: where its vectors came from.
EXPORT_INFO = LISTING
#: Formats written as a folder (the others are files).
FOLDER_FORMATS = (Format.MODEL2VEC, Format.SENTENCE_TRANSFORMERS, Format.NPY, Format.PROJECTOR)
#: The numbers each format stores at their own size; the others store the rounded vectors as float32.
STORED_DTYPES = {
    Format.MODEL2VEC: {DType.FLOAT32, DType.FLOAT16, DType.INT8},
    Format.NPY: {DType.FLOAT32, DType.FLOAT16, DType.INT8},
    Format.KV: {DType.FLOAT32, DType.FLOAT16},
}
#: The package a format needs beyond the base install, and the extra that installs it.
_NEEDS = {Format.MODEL2VEC: "model2vec", Format.SENTENCE_TRANSFORMERS: "sentence_transformers"}


def warn_unstored(formats: Sequence[Format], dtype: DType) -> None:
    """Say which of ``formats`` cannot store ``dtype``: they hold the rounded vectors at float32's size."""
    storing = ", ".join(f.value for f, kinds in STORED_DTYPES.items() if dtype in kinds)
    for fmt in formats:
        if dtype not in STORED_DTYPES.get(fmt, {DType.FLOAT32}):
            logger.warning("%s stores float32: the %s vectors are written rounded, at float32's size (%s store %s)",
                           fmt.value, dtype.value, storing, dtype.value)  # fmt: skip


def check_formats_available(formats: Sequence[Format]) -> None:
    """Say which extra to install, before anything is written, when a format's package is missing."""
    for fmt in formats:
        if fmt in _NEEDS:
            require(_NEEDS[fmt], "export", f"the {fmt.value} format")


def word_tokenizer(words: Sequence[str], lowercase: bool) -> Any:
    """A ``tokenizers`` word-level tokenizer over ``words`` + ``[UNK]``: BERT's split on spaces and
    punctuation (as distill's ``\\w+`` words), lowercasing when the vocabulary is lowercased."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {w: i for i, w in enumerate(words)}
    vocab[UNK] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


#: The norm of a row for a letter the corpus never showed, relative to the other pieces': it gives a word of
#: such letters alone a direction, and turns a word that has a seen piece by about a thousandth of a radian
#: per such letter, as the pieces fallback leaves unseen pieces out.
LAST_RESORT = 1e-3


def _spec(tokenizer: Any) -> dict[str, Any]:
    """A (transformers) tokenizer's ``tokenizers`` spec, as its ``tokenizer.json`` holds it."""
    return dict(json.loads(tokenizer.backend_tokenizer.to_str()))


def _prefix(model: dict[str, Any]) -> str | None:
    """The continuing-subword prefix (``##``) of a WordPiece spec's model; None for other models."""
    return str(model.get("continuing_subword_prefix") or "##") if model["type"] == "WordPiece" else None


def _merges(model: dict[str, Any]) -> list[list[str]]:
    """A BPE spec's merges as pairs, in order (older files write each as one ``"a b"`` string)."""
    return [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]


def letters(tokenizer: Any) -> dict[int, str]:
    """The single-letter pieces any alphabetic word splits down to, by id, each as its letter: a WordPiece
    tokenizer's ``a`` and ``##a``, a BPE tokenizer's alphabet (the pieces no merge makes) where a piece is a
    whole letter (a byte of a longer character is not). Empty for other tokenizers."""
    model = _spec(tokenizer)["model"]
    vocab, prefix = model["vocab"], _prefix(model)
    if prefix is not None:
        found = ((token.removeprefix(prefix), i) for token, i in vocab.items())
    elif model["type"] == "BPE":
        made = {a + b for a, b in _merges(model)}
        found = ((tokenizer.convert_tokens_to_string([token]), i) for token, i in vocab.items() if token not in made)
    else:
        return {}
    return {i: text for text, i in found if len(text) == 1 and text.isalpha()}


def wordpiece_fallback(words: Sequence[str], values: np.ndarray, pieces: Any) -> tuple[Any, np.ndarray] | None:
    """For a WordPiece model with piece vectors: the model's own tokenizer with a vocabulary of our words
    plus the model's alphabetic pieces that have a vector, so a known word is one token (its static vector)
    and any other word splits into pieces (their static vectors scaled to the words' median norm unless tuned
    with them). A longer piece the corpus never showed has no row, so the longest match falls back to shorter
    pieces; single letters it never showed have the model's reading of them
    (:func:`distill.serve.alone.read_unseen_letters`) at :data:`LAST_RESORT` norm, so that every alphabetic
    word splits, none becomes ``[UNK]`` and none is a zero vector. None for other tokenizers."""
    from tokenizers import Tokenizer

    spec = _spec(pieces.tokenizer)
    prefix = _prefix(spec["model"])
    if prefix is None:
        return None
    vocab = {w: i for i, w in enumerate(words)}
    # alphabetic pieces only, as the words are: punctuation and digits stay unknown (they add nothing), as
    # in the word-level export; and only those with a vector: no row is all zeros
    ids, has_vector = spec["model"]["vocab"], pieces.has_vector
    extra = [t for t in ids if t not in vocab and t.removeprefix(prefix).isalpha() and has_vector[ids[t]]]
    piece_ids = [ids[t] for t in extra]
    piece_rows = pieces.vectors[piece_ids].astype(np.float32)
    if not pieces.scaled:  # tuned pieces keep the norms they were trained to, a word's own row its norm
        scale = ~pieces.own_rows[piece_ids]
        piece_rows[scale] *= np.median(np.linalg.norm(values, axis=1)) / np.linalg.norm(
            piece_rows[scale], axis=1, keepdims=True
        )
    piece_rows[pieces.counts[piece_ids] == 0] *= LAST_RESORT  # letters read alone
    for t in [*extra, UNK]:
        vocab[t] = len(vocab)
    spec["model"]["vocab"] = vocab
    spec["model"]["unk_token"] = UNK
    spec["post_processor"] = None
    spec["added_tokens"] = []  # the model's special tokens ([CLS], [SEP], ...) have no row here
    rows = np.vstack([values, piece_rows, np.zeros((1, values.shape[1]), dtype=np.float32)])
    return Tokenizer.from_str(json.dumps(spec)), rows


def bpe_fallback(
    words: Sequence[str], values: np.ndarray, pieces: Any, lowercase: bool
) -> tuple[Any, np.ndarray] | None:
    """For a BPE model (GPT-2, Llama, SmolLM2) with piece vectors: the model's own tokenizer with our words
    added as whole pre-tokens (``Ġqueen``, ``▁queen``; merges are skipped for a pre-token in the vocabulary),
    so a known word is one token and any other word splits into the model's pieces, the text's first word
    read as every other. A piece the corpus never showed gets a row from the pieces it is merged from or
    merged into (:func:`_merged_rows`). Only alphabetic pieces are kept, as in the WordPiece export, and the
    pieces merged on the way to them (:func:`_needed`). Pieces come at the words' median norm unless tuned
    with them; a row made only from letters read alone or from what a piece is merged into, or one of a piece
    kept only on the way (a space), is weighed down to :data:`LAST_RESORT`. A word that is more than one
    pre-token (``abc123``) is an added token. None for other tokenizers."""
    from tokenizers import Tokenizer, normalizers

    backend, spec = pieces.tokenizer.backend_tokenizer, _spec(pieces.tokenizer)
    if spec["model"]["type"] != "BPE":
        return None
    ids, seen, has = spec["model"]["vocab"], pieces.counts > 0, pieces.has_vector
    rows = pieces.vectors.astype(np.float32)
    if not pieces.scaled:  # tuned pieces keep the norms they were trained to, a word's own row its norm
        scale = has & ~pieces.own_rows
        rows[scale] *= np.median(np.linalg.norm(values, axis=1)) / np.linalg.norm(rows[scale], axis=1, keepdims=True)
    merges = _merges(spec["model"])
    resort = _merged_rows(ids, merges, rows, has, seen)
    alphabetic = np.zeros(len(rows), bool)  # as the WordPiece export: punctuation and digits add nothing
    alphabetic[list(ids.values())] = [pieces.tokenizer.convert_tokens_to_string([t]).strip().isalpha() for t in ids]
    rows[resort | ~alphabetic] *= LAST_RESORT
    normalize = backend.normalizer.normalize_str if backend.normalizer is not None else str
    vocab: dict[str, int] = {}
    added = []  # words that are not one pre-token, or share one with an earlier word
    for i, word in enumerate(words):
        pre = backend.pre_tokenizer.pre_tokenize_str(normalize("a " + word))
        if len(pre) == 2 and pre[1][0] not in vocab:
            vocab[pre[1][0]] = i
        else:
            added.append(i)
    for i in added:  # an added token takes the id its text has in the vocabulary: the word's own row
        vocab[words[i] if words[i] not in vocab else f"{words[i]}\x00{i}"] = i
    special = {t["content"] for t in spec["added_tokens"]}
    keep = has & _needed(ids, merges, seen & alphabetic, alphabetic)
    extra = [t for t, i in sorted(ids.items(), key=lambda item: item[1]) if keep[i] and t not in special | vocab.keys()]
    vocab.update((t, len(words) + j) for j, t in enumerate([*extra, UNK]))
    kept = [[a, b] for a, b in merges if a in vocab and b in vocab and a + b in vocab]
    spec["model"].update(vocab=vocab, merges=kept, ignore_merges=True, unk_token=UNK)
    spec["added_tokens"] = [{"id": i, "content": words[i], "single_word": True, "lstrip": True, "rstrip": False,
                             "normalized": True, "special": False} for i in added]  # fmt: skip
    spec["post_processor"] = None
    _prefix_space(spec["pre_tokenizer"])
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    if lowercase:
        tokenizer.normalizer = normalizers.Sequence([normalizers.Lowercase(), *filter(None, [backend.normalizer])])
    return tokenizer, np.vstack([values, rows[[ids[t] for t in extra]], np.zeros((1, values.shape[1]), np.float32)])


def _merged_rows(
    ids: dict[str, int], merges: list[list[str]], rows: np.ndarray, has: np.ndarray, seen: np.ndarray
) -> np.ndarray:
    """Rows, in place, for the BPE pieces the corpus never showed: first the mean of the two a piece is merged
    from (merges come in order, parts first); then, for a piece still without one (a space, a byte of a longer
    character), the mean of the pieces merged from it (in reverse order, products first). Returns which rows
    are a last resort: read alone, or made from such rows or from the pieces merged from it only."""
    resort = ~seen
    for a, b in merges:
        i = ids[a + b]
        if not has[i]:
            found = [p for p in (ids[a], ids[b]) if has[p]]
            if found:
                rows[i], has[i], resort[i] = rows[found].mean(axis=0), True, all(resort[p] for p in found)
    sums, counts = np.zeros_like(rows), np.zeros(len(rows), np.int64)
    for a, b in reversed(merges):
        i = ids[a + b]
        if not has[i] and counts[i]:
            rows[i], has[i] = sums[i] / counts[i], True
        for part in (ids[a], ids[b]):
            if has[i] and not has[part]:
                sums[part] += rows[i]
                counts[part] += 1
    late = ~has & (counts > 0)
    rows[late], has[late] = sums[late] / counts[late, None], True
    return resort


def _needed(ids: dict[str, int], merges: list[list[str]], wanted: np.ndarray, letters: np.ndarray) -> np.ndarray:
    """The BPE pieces an export keeps: the ``wanted`` ones (alphabetic, seen), the alphabet's ``letters``, and
    those merged on the way to either (in reverse order, products first: a space, a byte of a longer
    character). A piece that leads to none is dropped with its merge: the text it covered keeps the two
    pieces it was merged from, whose mean its row would have been, or is ``[UNK]`` (punctuation, digits)."""
    made = np.zeros(len(wanted), bool)
    made[[ids[a + b] for a, b in merges]] = True
    needed = wanted | (letters & ~made)
    for a, b in reversed(merges):
        if needed[ids[a + b]]:
            needed[ids[a]] = needed[ids[b]] = True
    return needed


def _prefix_space(pre_tokenizer: dict[str, Any] | None) -> None:
    """A byte-level pre-tokenizer that reads the text's first word as every other (``Ġqueen``): a static
    model has no position."""
    if pre_tokenizer is None:
        return
    for part in [pre_tokenizer, *pre_tokenizer.get("pretokenizers", [])]:
        if part.get("type") == "ByteLevel":
            part["add_prefix_space"] = True


def token_table(words: Sequence[str], values: np.ndarray, lowercase: bool, pieces: Any) -> tuple[Any, np.ndarray]:
    """The tokenizer of an exported static model and its rows (words first, ``[UNK]``, a zero row, last): the
    model's own tokenizer over our words and its pieces where :func:`wordpiece_fallback` or
    :func:`bpe_fallback` applies, else word-level over our words (unknown words add nothing)."""
    floats = values.astype(np.float32)
    found = pieces is not None and (
        wordpiece_fallback(words, floats, pieces) or bpe_fallback(words, floats, pieces, lowercase)
    )
    if found:
        return found[0], found[1].astype(values.dtype)
    return word_tokenizer(words, lowercase), np.vstack([values, np.zeros((1, values.shape[1]), dtype=values.dtype)])


def write_kv(words: Sequence[str], q: Quantized, counts: np.ndarray | None, path: Path) -> Path:
    """gensim ``KeyedVectors.save``: load with ``KeyedVectors.load(path, mmap="r")``. int8 is stored dequantized."""
    values = q.values if q.scale is None else q.dequantize()
    kv = to_keyed_vectors(list(words), values.astype(np.float32), counts)
    kv.vectors = values if q.scale is None else kv.vectors  # keep float16 as float16
    with atomic_path(path) as tmp:
        kv.save(str(tmp))
        side = kv_side_file(tmp)  # gensim writes big arrays beside the pickle
        if side.exists():
            os.replace(side, kv_side_file(path))
        else:  # an earlier, larger export's array is not this one's
            kv_side_file(path).unlink(missing_ok=True)
    return path


def kv_side_file(path: Path) -> Path:
    """Where gensim's ``KeyedVectors.save`` puts the vectors of a large ``.kv`` beside its pickle."""
    return Path(str(path) + ".vectors.npy")


def static_model(
    words: Sequence[str], values: np.ndarray, lowercase: bool, pieces: Any = None, base_model: str | None = None
) -> Any:
    """The model2vec ``StaticModel`` of float ``values`` over :func:`token_table`'s tokenizer: what the
    model2vec export saves."""
    return _static_model(*token_table(words, values, lowercase, pieces), base_model)


def _static_model(tokenizer: Any, rows: np.ndarray, base_model: str | None) -> Any:
    """model2vec's ``StaticModel`` of a token table."""
    StaticModel = require("model2vec", "export", "the model2vec format").StaticModel
    return StaticModel(rows, tokenizer, normalize=False, base_model_name=base_model, max_length=None)


@contextlib.contextmanager
def _weights_written(path: Path) -> Iterator[None]:
    """safetensors reports a failed write (a full disk) as its own error: one line, as any other failed write."""
    from safetensors import SafetensorError

    try:
        yield
    except SafetensorError as err:
        raise OutputError(
            f"cannot write {path} ({err}); is the disk full? free some space or choose another --out"
        ) from err


def write_model2vec(
    words: Sequence[str],
    vectors: np.ndarray,
    dtype: DType,
    lowercase: bool,
    path: Path,
    base_model: str,
    info: dict[str, Any],
    pieces: Any = None,
    card: str | None = None,
) -> Path:
    """A model2vec ``StaticModel`` folder of float ``vectors`` stored in ``dtype`` (``card``: its README.md,
    in place of model2vec's generic one). With piece vectors of a WordPiece model, unknown words get their
    pieces' vectors, as in the sentence-transformers export; otherwise they add nothing. int8 is model2vec's
    own: the whole token table, words and pieces, with one scale for the table (``export.json`` keeps it), so
    model2vec encodes it on its fast path; its sentence vectors are then the float ones divided by that scale."""
    tokenizer, rows = token_table(words, vectors, lowercase, pieces)
    stored = quantize(rows, dtype, Scale.TABLE)
    if stored.scale is not None:
        info = {**info, "int8_scale": Scale.TABLE.value, "int8_table_scale": float(stored.scale[0, 0])}
    model = _static_model(tokenizer, stored.values, base_model)
    with atomic_dir(path) as tmp, _weights_written(path):
        model.save_pretrained(tmp)
        _finish(tmp, info, card)
    return path


def _finish(tmp: Path, info: dict[str, Any], card: str | None) -> None:
    """The export's info, its card, and every file readable by others (as a model folder is shared)."""
    write_json(info, tmp / EXPORT_INFO)
    if card is not None:
        (tmp / "README.md").write_text(card, encoding="utf-8")
    for file in tmp.rglob("*"):
        file.chmod(0o755 if file.is_dir() else 0o644)


def write_sentence_transformers(
    words: Sequence[str],
    q: Quantized,
    lowercase: bool,
    path: Path,
    info: dict[str, Any],
    pieces: Any = None,
    card: str | None = None,
) -> Path:
    """A ``SentenceTransformer`` folder with one ``StaticEmbedding`` (mean of word vectors). With piece vectors
    of a WordPiece model, unknown words get their pieces' vectors; otherwise they add nothing to the
    direction. Stored as float32: ``EmbeddingBag`` has no int8."""
    SentenceTransformer = require(
        "sentence_transformers", "export", "the sentence-transformers format"
    ).SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    tokenizer, values = token_table(words, q.dequantize(), lowercase, pieces)
    module = StaticEmbedding(tokenizer, embedding_weights=values)
    with atomic_dir(path) as tmp, _weights_written(path):
        SentenceTransformer(modules=[module], device="cpu").save(str(tmp))
        _finish(tmp, info, card)
    return path


def write_npy(words: Sequence[str], q: Quantized, counts: np.ndarray | None, path: Path, info: dict[str, Any]) -> Path:
    """``vectors.npy`` (as stored), ``scale.npy`` (int8), ``vocab.tsv`` (word, count) and ``export.json``."""
    with atomic_dir(path) as tmp:
        np.save(tmp / "vectors.npy", q.values)
        if q.scale is not None:
            np.save(tmp / "scale.npy", q.scale)
        write_vocab(words, counts if counts is not None else np.zeros(len(words), dtype=np.int64), tmp / VOCAB)
        write_json(info, tmp / EXPORT_INFO)
    return path


def read_npy(path: str | Path) -> Any:
    """The ``npy`` export as float32 gensim ``KeyedVectors`` (int8 dequantized)."""
    path = Path(path)
    if not (path / "vectors.npy").is_file():
        raise ConfigError(f"{path} is not an npy export (no vectors.npy)")
    try:
        values = np.load(path / "vectors.npy", allow_pickle=False)
        scale = np.load(path / "scale.npy", allow_pickle=False) if (path / "scale.npy").is_file() else None
    except (OSError, ValueError, EOFError) as err:
        raise ConfigError(f"{path}'s vectors.npy or scale.npy is truncated or damaged; export it again") from err
    table = read_vocab_counts(path / VOCAB)
    if values.ndim != 2 or len(values) != len(table):
        raise ConfigError(f"{path}: vectors.npy and vocab.tsv do not match; export it again")
    vectors = Quantized(values, scale).dequantize()
    return to_keyed_vectors(list(table), vectors, np.array(list(table.values())))


def write_format(
    fmt: Format,
    words: Sequence[str],
    q: Quantized,
    vectors: np.ndarray,
    counts: np.ndarray | None,
    out: Path,
    stem: str,
    lowercase: bool,
    base_model: str,
    info: dict[str, Any],
    pieces: Any = None,
    target: Path | None = None,
    card: Callable[[Format, Path], str] | None = None,
) -> list[Path]:
    """Write ``q``, the float ``vectors`` as stored, in one format into ``out`` as ``<stem>.<format>`` (or a
    folder format as ``target`` itself); returns the paths written (``pieces``: OOV fallback of the sentence
    exports; ``card``: the README.md of a model2vec or sentence-transformers folder, given the format and the
    folder). model2vec stores its own token table in ``q``'s dtype, quantized once from ``vectors``."""
    if fmt is Format.MODEL2VEC:
        path = target or out / f"{stem}.model2vec"
        text = card(fmt, path) if card else None
        return [write_model2vec(words, vectors, q.dtype, lowercase, path, base_model, info, pieces, text)]
    if fmt is Format.WORD2VEC:
        kv = to_keyed_vectors(list(words), q.dequantize(), counts)
        return [write_word2vec(kv, out / f"{stem}.txt"), write_word2vec(kv, out / f"{stem}.bin", binary=True)]
    if fmt is Format.KV:
        return [write_kv(words, q, counts, out / f"{stem}.kv")]
    if fmt is Format.SENTENCE_TRANSFORMERS:
        path = target or out / f"{stem}.st"
        text = card(fmt, path) if card else None
        return [write_sentence_transformers(words, q, lowercase, path, info, pieces, text)]
    if fmt is Format.PROJECTOR:
        return [write_projector(words, q, counts, target or out / f"{stem}.projector", info)]
    return [write_npy(words, q, counts, target or out / f"{stem}.npy", info)]


def write_projector(
    words: Sequence[str], q: Quantized, counts: np.ndarray | None, path: Path, info: dict[str, Any]
) -> Path:
    """``vectors.tsv`` (one vector a line, tab-separated) and ``metadata.tsv`` (a ``word<TAB>count`` header,
    then one row a vector), the pair the Embedding Projector loads."""
    from distill.vectors.floattext import format_rows

    values = q.dequantize()
    counts = counts if counts is not None else np.zeros(len(words), dtype=np.int64)
    with atomic_dir(path) as tmp:
        rows = format_rows(values)
        (tmp / "vectors.tsv").write_bytes(b"".join(row.replace(b" ", b"\t") + b"\n" for row in rows))
        table = "".join(f"{w}\t{int(c)}\n" for w, c in zip(words, counts))
        (tmp / "metadata.tsv").write_text("word\tcount\n" + table, encoding="utf-8")
        write_json(info, tmp / EXPORT_INFO)
    return path


def size_on_disk(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    extra = kv_side_file(path)
    return path.stat().st_size + (extra.stat().st_size if extra.exists() else 0)
