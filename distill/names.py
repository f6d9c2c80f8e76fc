"""Every name in a run folder, made here and read back here: the sets' files, the run's own files and the
work folder's. No other module spells a file name of a run folder.

A *set* is one vector per word, named for how it was made: ``layer{L}.{pooling}`` for a layer and pooling
of the run (``layer1.pc``), or a derived name that starts with its layers (``layers4-6.mean``,
``layers1_3.pc+mean.top3``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from distill.config import ALL_FORMATS, Pooling, SetFormat

MANIFEST = "manifest.json"
VOCAB = "vocab.tsv"
ANALYSIS = "analysis.json"
ANALYSIS_REPORT = "analysis.md"
TEACHER = "teacher.npz"
REPORT = "report.md"
REPORT_DATA = "report.json"
BASELINES = "baselines.json"
LOCK_FILE = ".distill.lock"
TABLE_DIR = "table"
BASELINES_DIR = "baselines"
EXPORT_DIR = "export"

#: The work folder of a running (or killed) run, and its files.
WORK_DIR = ".distill-work"
FINGERPRINT = "fingerprint.json"
COUNTED_WORDS = "vocabulary.json"
COUNTS = "counts.npy"
CHECKPOINT = "checkpoint.npz"
CHECKPOINT_PART = "checkpoint.tmp.npz"
OCCURRENCES_DIR = "occurrences"
CHUNKS_DIR = "chunks"
ALONE_DIR = "alone"  # words read alone, a block of words a file, kept until the run finishes
TEXTS_DIR = "texts"  # the teacher's readings of texts outside the corpus (--teacher-bags), a block a file, the same
STDIN_COPY = "stdin.txt"
TUNING = "tuning.pt"  # the tuning of distill model / run --tune-blend after an epoch, kept until the run finishes

#: The files of one set, by suffix after its name.
SET_SUFFIXES = (".txt", ".bin", ".faiss", ".faiss.words.txt")
#: ``layer{L}.{pooling}.txt`` or ``.bin``: a layer set's vector file.
_LAYER_FILE = re.compile(r"^layer(\d+)\.(pc|mean)\.(txt|bin)$")
#: ``layer{L}.{pooling}``: a layer set.
_LAYER_SET = re.compile(r"^layer(\d+)\.(pc|mean)$")
#: A set's file or a layer's pieces, as a run names them (``layer1.pc.txt``, ``layers4-6.mean.alone0.15.bin``).
_SET_OUTPUT = re.compile(r"^layers?\d[\w.+-]*\.(txt|bin|faiss|npz)$")
#: What :func:`distill.files.atomic_path` writes before the rename: ``.{name}.tmp-{pid}``.
_TEMPORARY = re.compile(r"^\..+\.tmp-\d+$")


def export_entry(name: str, in_export_dir: bool) -> str:
    """How a run's manifest lists a file or folder exported into the run: ``NAME``, or ``export/NAME``."""
    return f"{EXPORT_DIR}/{name}" if in_export_dir else name


def split_export_entry(entry: str) -> tuple[str | None, str]:
    """An :func:`export_entry` read back: the subfolder (``export``, or None for the run folder) and the name,
    which the caller checks as a plain name."""
    head, sep, tail = entry.partition("/")
    return (EXPORT_DIR, tail) if sep and head == EXPORT_DIR else (None, entry)


def alone_block(digest: str) -> str:
    """The work folder's file of one block of words read alone, named for what they were read from."""
    return f"{digest}.npy"


def texts_block(digest: str) -> str:
    """The work folder's file of one block of texts read outside the corpus, named for what they were read from."""
    return f"{digest}.npz"


def input_copy(index: int) -> str:
    """The work folder's copy of corpus input ``index`` that can be read only once (a FIFO, a device)."""
    return f"input-{index}.txt"


def set_name(layer: int, pooling: Pooling) -> str:
    """``layer1.pc``: the set of one layer and pooling."""
    return f"layer{int(layer)}.{Pooling(pooling).value}"


def layers_span(layers: Sequence[int]) -> str:
    """How a set's name starts: ``layer1``, ``layers4-6`` (a range), ``layers1_3`` (any other list)."""
    if len(layers) == 1:
        return f"layer{layers[0]}"
    if list(layers) == list(range(layers[0], layers[-1] + 1)):
        return f"layers{layers[0]}-{layers[-1]}"
    return "layers" + "_".join(map(str, layers))


def layer_set(name: str) -> tuple[int, Pooling] | None:
    """The layer and pooling of a layer set's name (``layer1.pc``); None for any other name."""
    match = _LAYER_SET.match(name)
    return None if match is None else (int(match.group(1)), Pooling(match.group(2)))


def layer_file(file_name: str) -> tuple[int, Pooling] | None:
    """The layer and pooling of a layer set's vector file (``layer1.pc.txt``); None for any other file."""
    match = _LAYER_FILE.match(file_name)
    return None if match is None else (int(match.group(1)), Pooling(match.group(2)))


def set_files(name: str, formats: Sequence[SetFormat] = ALL_FORMATS) -> list[str]:
    """The file names of set ``name`` written as ``formats``."""
    suffixes = {SetFormat.TXT: (".txt",), SetFormat.BIN: (".bin",), SetFormat.FAISS: (".faiss", ".faiss.words.txt")}
    return [f"{name}{suffix}" for suffix in SET_SUFFIXES if any(suffix in suffixes[f] for f in formats)]


def set_of_file(file_name: str) -> str | None:
    """The set a listed vector file belongs to (``layer1.pc.bin`` -> ``layer1.pc``); None for other files."""
    return file_name.removesuffix(".bin") if file_name.endswith(".bin") else None


def store_file(layer: int) -> str:
    """One layer's matrix in the occurrence store's folder of the work folder."""
    return f"layer{int(layer)}.npy"


def pieces_name(layer: int) -> str:
    """The piece vectors of one layer (``--pieces``)."""
    return f"layer{int(layer)}.pieces.npz"


def tuned_pieces_name(set_name: str) -> str:
    """The pieces of a tuned set (``distill tune`` of a run with piece vectors), trained with its words."""
    return f"{set_name}.pieces.npz"


def tuned_map_name(set_name: str) -> str:
    """The linear map a tuned set applied to the rows no tuning sentence held, blend included: what puts a
    word read alone into the tuned set's space."""
    return f"{set_name}.map.npz"


def is_pieces_file(file_name: str) -> bool:
    """Whether a file holds piece vectors of a layer."""
    return file_name.startswith("layer") and file_name.endswith(".pieces.npz")


def is_run_output(file_name: str) -> bool:
    """Whether a run may write a file of this name into its folder (and would replace one there)."""
    return file_name in (MANIFEST, VOCAB, ANALYSIS, ANALYSIS_REPORT, TEACHER) or bool(_SET_OUTPUT.match(file_name))


def is_temporary(file_name: str) -> bool:
    """Whether a file is a write a killed command left before its rename."""
    return _TEMPORARY.match(file_name) is not None
