"""Read corpus lines, split them into words, build the vocabulary."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import logging
import lzma
import os
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import regex

from distill.config import EncodingErrors
from distill.errors import ConfigError
from distill.files import READ_ERRORS, compressed_advice, compressed_kind
from distill.iterate import batched
from distill.parallel import Mapper

logger = logging.getLogger(__name__)

#: A word is a run of Unicode word characters (letters, combining marks, digits, underscores) that starts with
#: one that is no mark, as BERT's basic tokenizer splits text (punctuation and spaces separate words; "Micron's"
#: is "Micron" + "s"). Combining marks stay in their word (Hindi "नमस्ते", Arabic with vowel marks): the ``regex``
#: package's ``\w`` follows Unicode's definition, where Python's ``re`` leaves marks out; a mark alone (an emoji's
#: variation selector) is no word.
WORD_RE = regex.compile(r"[^\W\p{M}]\w*")

#: The longest piece of a line read at once (bytes): a longer line is read in pieces cut at white space, so
#: memory does not grow with line length.
MAX_LINE_BYTES = 1 << 20


def normalize_text(text: str) -> str:
    """Text as distill reads it everywhere (corpus, vocabulary files, benchmarks): Unicode NFC (a decomposed
    "café" is the composed one), without a byte-order mark."""
    text = text.removeprefix("\ufeff")
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def is_alphabetic(word: str) -> bool:
    """A letter, then letters and combining marks: ``str.isalpha`` for scripts whose words hold marks."""
    return bool(word) and word[0].isalpha() and all(c.isalpha() or unicodedata.category(c)[0] == "M" for c in word)


def _pieces(handle: io.BufferedIOBase, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[bytes, bool]]:
    """The lines of a binary file, each in pieces of at most ``limit`` bytes cut at the last white space (or
    between UTF-8 characters when a piece has none); yields (piece, whether it ends its line)."""
    carry = b""
    while True:
        chunk = handle.readline(limit - len(carry))
        if not chunk and not carry:
            return
        piece, carry = carry + chunk, b""
        if piece.endswith(b"\n") or not chunk or len(piece) < limit:
            yield piece, True
            continue
        cut = max(piece.rfind(b" "), piece.rfind(b"\t")) + 1
        if cut <= 0:  # no white space: cut before the last UTF-8 character, which may not be whole yet
            cut = len(piece) - 1
            while cut > 0 and piece[cut] & 0xC0 == 0x80:
                cut -= 1
            cut = cut or len(piece)
        yield piece[:cut], False
        carry = piece[cut:]


#: Lines read at once when counting and walking the corpus: one regex call per block, not per line.
BLOCK_LINES = 4096

#: Where a line splits into sentences (``--split-sentences``): after . ! or ? (and any closing quotes or
#: brackets), at white space followed by something other than a lower-case letter.
SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[^\sa-z])")


def split_sentences(line: str) -> list[str]:
    """The sentences of one line, in order ("Mr. Smith" may split: the rule is kept simple and predictable)."""
    return [part for part in SENTENCE_BREAK.split(line) if part]


@dataclass
class CorpusStats:
    """What reading the corpus saw; filled while lines are read."""

    files: list[dict[str, object]] = field(default_factory=list)
    lines: int = 0
    empty_lines: int = 0
    replaced_lines: int = 0  # lines with bytes that were not UTF-8 (only with --encoding-errors replace)
    words: int = 0


def input_name(path: str) -> str:
    """How messages and the manifest name a corpus input: ``<stdin>`` for ``-``."""
    return "<stdin>" if path == "-" else path


def streamed(path: str) -> bool:
    """Whether a corpus input can be read only once: stdin (``-``), a FIFO, a character device."""
    return path == "-" or (os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path))


#: Compressed corpus files, read as they stream, by their last suffix.
OPENERS: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: Files a corpus folder contributes: plain text and compressed text, found recursively.
CORPUS_SUFFIXES = (".txt", *OPENERS)


def _open_text(path: str) -> io.BufferedIOBase:
    if path == "-":
        return sys.stdin.buffer  # type: ignore[return-value]
    opener = OPENERS.get(os.path.splitext(path)[1])
    return opener(path, "rb") if opener is not None else open(path, "rb")  # type: ignore[no-any-return]


def _decode(raw: bytes, head: bytes, errors: EncodingErrors, stats: CorpusStats, name: str, line_no: int) -> str:
    """Line ``line_no`` of input ``name`` as text; ConfigError for bytes that are not UTF-8 (named for what they
    are when the input's first bytes, ``head``, are compressed data), unless ``errors`` replaces them."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if compressed := _not_text(name, head):
            raise ConfigError(compressed) from err
        if errors is EncodingErrors.STRICT:
            raise ConfigError(
                f"{name}, line {line_no}: bytes that are not UTF-8 ({err.reason} at byte {err.start}); convert the "
                "file to UTF-8 or pass --encoding-errors replace"
            ) from err
        stats.replaced_lines += 1
        return raw.decode("utf-8", errors="replace")


def _not_text(name: str, head: bytes) -> str | None:
    """What to do with an input whose first bytes (``head``) are compressed data, if they are (stdin has no name
    to give: it is decompressed into the pipe)."""
    found = compressed_kind(head)
    if name == "<stdin>" and found is not None:
        return f"{name} is {found[0]}-compressed data: decompress it into the pipe, or give the file itself"
    return compressed_advice(name, head, tuple(OPENERS))


#: ``outputs_of(folder)``: the names of files in ``folder`` that some program wrote and that are no corpus
#: (a distill run's outputs: :func:`distill.rundir.listed_files`).
OutputsOf = Callable[[Path], Collection[str]]


_LINKS_TOLD: set[tuple[str, int]] = set()  # (folder, links) a warning was given for: a run lists its corpus often


def _corpus_files(root: Path, outputs_of: OutputsOf | None) -> tuple[list[str], list[Path]]:
    """The text files (:data:`CORPUS_SUFFIXES`) under ``root`` that are neither hidden (nor in a hidden folder, such
    as a run's work folder), nor named by ``outputs_of`` their folder, nor links to files outside ``root`` (a folder
    handed over is read within itself: a link in it must not carry another file's words into the vectors);
    then those links."""
    ours: dict[Path, Collection[str]] = {}
    found, outside = [], []
    inside = os.path.realpath(root)
    for path in root.rglob("*"):  # links to folders are not descended into
        if not path.name.endswith(CORPUS_SUFFIXES) or not path.is_file():
            continue
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.is_symlink() and os.path.commonpath([inside, os.path.realpath(path)]) != inside:
            outside.append(path)
            continue
        if path.parent not in ours:
            ours[path.parent] = outputs_of(path.parent) if outputs_of is not None else ()
        if path.name not in ours[path.parent]:
            found.append(str(path))
    return sorted(found), sorted(outside)


def expand_corpus(paths: Sequence[str], outputs_of: OutputsOf | None = None) -> list[str]:
    """Files of the corpus: each folder is replaced by its text files (:data:`CORPUS_SUFFIXES`), recursively, sorted;
    hidden files, those ``outputs_of`` names and links to files outside the folder are left out (the links
    with a warning, once). A file reached twice (a folder and a file in it, or two names of one file) is a
    ConfigError: its words would be counted twice."""
    files: list[str] = []
    for path in paths:
        folder = Path(path)
        if path != "-" and folder.is_dir():
            found, outside = _corpus_files(folder, outputs_of)
            links = (
                f"{len(outside)} link(s) to files outside it not read ({outside[0]}); give such a file as its own "
                "--corpus to read it"
                if outside
                else ""
            )
            if not found:
                raise ConfigError(
                    f"corpus folder {path} holds no text file ({', '.join(CORPUS_SUFFIXES)})"
                    + (f" of its own: {links}" if links else "")
                )
            if links and (path, len(outside)) not in _LINKS_TOLD:
                _LINKS_TOLD.add((path, len(outside)))
                logger.warning("corpus folder %s: %s", path, links)
            files += found
        else:
            files.append(path)
    seen: dict[str, str] = {}  # each file's real path: the name it was first reached by
    for path in (p for p in files if p != "-"):
        key = os.path.realpath(path)
        if key in seen:
            names = path if seen[key] == path else f"{seen[key]} and {path}"
            raise ConfigError(f"the corpus reads one file twice ({names}): its words would count twice; give it once")
        seen[key] = path
    return files


def iter_lines(
    paths: Sequence[str],
    errors: EncodingErrors = EncodingErrors.STRICT,
    stats: CorpusStats | None = None,
    sentences: bool = False,
    outputs_of: OutputsOf | None = None,
    given: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Yield every line of every file (folders: their text files), stripped, empty lines skipped; ``-``: stdin.
    With ``sentences``, each line's sentences instead (:func:`split_sentences`), counted as lines. Folders are
    read as :func:`expand_corpus` says, leaving out the files ``outputs_of`` names. ``given``: the input each
    copy among ``paths`` was made from (stdin, a FIFO), which messages and ``stats`` name instead.

    Files are streamed, never held whole. Raises ConfigError naming file and line for bytes that
    are not UTF-8 (unless ``errors`` is ``replace``) and for a corpus with no text at all.
    """
    stats = stats if stats is not None else CorpusStats()
    given = given or {}
    total = 0
    for path in expand_corpus(paths, outputs_of):
        handle, name = _open_text(path), input_name(given.get(path, path))
        digest = hashlib.sha256()
        n_lines, head = 0, None
        try:
            for raw, ends in _pieces(handle):
                digest.update(raw)
                head = raw if head is None else head  # the file's first bytes: compressed data's magic
                n_lines += ends
                text = _decode(raw, head, errors, stats, name, n_lines + (not ends))
                text = normalize_text(text).strip()
                if not text:
                    stats.empty_lines += 1
                    continue
                parts = split_sentences(text) if sentences else [text]
                stats.lines += len(parts)
                total += len(parts)
                yield from parts
        except READ_ERRORS as err:
            raise ConfigError(
                f"cannot read corpus file {name}: {err or type(err).__name__}; is it damaged or truncated?"
            ) from err
        finally:
            if handle is not sys.stdin.buffer:
                handle.close()
        stats.files.append({"path": name, "sha256": digest.hexdigest(), "lines": n_lines})
    if total == 0:
        raise ConfigError(
            f"the corpus ({', '.join(input_name(given.get(p, p)) for p in paths)}) has no text; give files "
            "with one sentence or paragraph per line"
        )


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of the words of one line."""
    return [m.span() for m in WORD_RE.finditer(text)]


@dataclass(frozen=True)
class Vocabulary:
    """Words and their corpus counts, most frequent first (ties in alphabetical order)."""

    words: tuple[str, ...]
    counts: np.ndarray  # (n_words,) int64
    lowercase: bool
    dropped: dict[str, int]  # reason -> number of distinct words left out

    def __len__(self) -> int:
        return len(self.words)

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}


def fold(word: str, lowercase: bool) -> str:
    return word.lower() if lowercase else word


def count_words(
    lines: Iterator[str], lowercase: bool, stats: CorpusStats | None = None, mapper: Mapper | None = None
) -> Counter[str]:
    """Word counts over the corpus (after case folding); with a ``mapper`` (a :class:`~distill.parallel.WorkerPool`'s),
    blocks of lines are counted in its workers and their counts added here."""
    counts: Counter[str] = Counter()
    n = 0
    if mapper is None:
        for block in batched(lines, BLOCK_LINES):  # "\n" is no word character: no word spans two lines
            words = WORD_RE.findall("\n".join(block))
            n += len(words)
            counts.update(map(str.lower, words) if lowercase else words)
    else:
        for counted, found in mapper(partial(count_block, lowercase), batched(lines, POOL_BLOCK_LINES)):
            n += found
            counts.update(counted)
    if stats is not None:
        stats.words = n
    return counts


#: Lines a worker counts at once: large enough that adding its counts here costs little.
POOL_BLOCK_LINES = 8 * BLOCK_LINES


def count_block(lowercase: bool, lines: list[str]) -> tuple[Counter[str], int]:
    """The word counts of a block of lines, and its number of words."""
    words = WORD_RE.findall("\n".join(lines))
    return Counter(map(str.lower, words) if lowercase else words), len(words)


def read_small_text(path: str | Path, what: str) -> list[str]:
    """A small text file's non-empty lines, stripped, normalized as the corpus's are (``.gz``, ``.bz2`` and ``.xz``
    read); ``what`` names the file in the one-line errors: bytes that are not UTF-8, an unreadable file, no text."""
    raw = b""
    try:
        with _open_text(str(path)) as handle:
            raw = handle.read()
        lines = normalize_text(raw.decode("utf-8")).splitlines()
    except UnicodeDecodeError as err:
        raise ConfigError(_not_text(str(path), raw) or f"{what} {path} is not UTF-8; convert it") from err
    except READ_ERRORS as err:
        raise ConfigError(f"cannot read the {what} {path}: {getattr(err, 'strerror', None) or err}") from err
    kept = [line.strip() for line in lines if line.strip()]
    if not kept:
        raise ConfigError(f"{what} {path} has no text")
    return kept


def read_word_list(path: str | Path, lowercase: bool) -> list[str]:
    """One word per line (extra columns after a tab or space are ignored); blank lines skipped. ``.gz``, ``.bz2``
    and ``.xz`` files are read as the corpus's are."""
    words = [fold(line.split()[0], lowercase) for line in read_small_text(path, "vocabulary file")]
    return list(dict.fromkeys(words))


def build_vocabulary(
    counts: Counter[str],
    *,
    lowercase: bool,
    min_count: int = 5,
    max_size: int | None = None,
    alpha_only: bool = True,
    word_list: Sequence[str] | None = None,
) -> Vocabulary:
    """Keep words seen at least ``min_count`` times (alphabetic ones unless told otherwise).

    With ``word_list`` the vocabulary is exactly those words that occur in the corpus; words of the
    list never seen are counted under ``dropped['not in corpus']``, not an error.
    """
    dropped: Counter[str] = Counter()
    if word_list is not None:
        kept = []
        for w in word_list:
            if counts.get(w, 0) == 0:
                dropped["not in corpus"] += 1
            else:
                kept.append(w)
    else:
        kept = []
        for w, c in counts.items():
            if alpha_only and not is_alphabetic(w):
                dropped["not alphabetic"] += 1
            elif c < min_count:
                dropped["under min_count"] += 1
            else:
                kept.append(w)
    kept.sort(key=lambda w: (-counts[w], w))
    if max_size is not None and len(kept) > max_size:
        dropped["over max_vocab"] += len(kept) - max_size
        kept = kept[:max_size]
    if not kept and word_list is not None:
        raise ConfigError(
            f"none of the {len(word_list)} words of the vocabulary file occurs in the corpus; check the file "
            f"and its casing ({'words are lowercased for this model' if lowercase else 'case is kept'})"
        )
    if not kept:
        raise ConfigError(
            "the vocabulary is empty: no word passes the filters "
            f"(min_count={min_count}, alpha_only={alpha_only}); lower --min-count or use a larger corpus"
        )
    for reason, n in sorted(dropped.items()):
        logger.info("vocabulary: %d words dropped (%s)", n, reason)
    return Vocabulary(
        words=tuple(kept),
        counts=np.array([counts[w] for w in kept], dtype=np.int64),
        lowercase=lowercase,
        dropped=dict(dropped),
    )
