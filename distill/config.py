"""Run options: one frozen dataclass that carries every default, its help and its panel, validated once
before any model loads. Choices are ``str`` enums, the same strings in Python, JSON and the CLI."""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import os
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from distill.choices import Choice
from distill.errors import ConfigError, check_installed

E = TypeVar("E", bound=enum.Enum)


class Pooling(Choice):
    """How a word's occurrence matrix becomes one vector."""

    PC = "pc"  # top right singular vector of the uncentered occurrences, signed toward their mean
    MEAN = "mean"  # mean of the occurrences


class SetFormat(Choice):
    """A file a vector set is written as."""

    TXT = "txt"  # word2vec text
    BIN = "bin"  # word2vec binary: what every distill command reads a run's set from
    FAISS = "faiss"  # a flat FAISS index and its word list


#: Every file of a set: what a run writes unless --formats says otherwise.
ALL_FORMATS = (SetFormat.TXT, SetFormat.BIN, SetFormat.FAISS)


class EncodingErrors(Choice):
    """What to do with bytes that are not UTF-8."""

    STRICT = "strict"  # stop with the file and line
    REPLACE = "replace"  # replace them with U+FFFD and count the lines


class Sampling(Choice):
    """How each word's occurrences are picked."""

    UNIFORM = "uniform"  # drawn from all of the word's occurrences
    GREEDY = "greedy"  # shuffled lines, encoding only those holding a word still short of occurrences


class StoreKind(Choice):
    """Where occurrence vectors wait for the reduction."""

    AUTO = "auto"
    MEMORY = "memory"
    DISK = "disk"
    DEVICE = "device"


class Engine(Choice):
    """Who runs the encoding pass."""

    LOCAL = "local"
    RAY = "ray"


class DType(Choice):
    """Numbers: those the model runs in, the occurrence store holds, an export stores. Each use takes some of
    them (:func:`check_dtype`)."""

    AUTO = "auto"  # chosen for the device (the model) or the memory (the store)
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"  # the model only
    INT8 = "int8"  # exports only, with a float32 scale


#: The numbers each use takes.
MODEL_DTYPES = (DType.AUTO, DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16)
STORE_DTYPES = (DType.AUTO, DType.FLOAT32, DType.FLOAT16)
EXPORT_DTYPES = (DType.FLOAT32, DType.FLOAT16, DType.INT8)


def check_dtype(dtype: DType | str, allowed: Sequence[DType], option: str) -> DType:
    """``dtype`` as a DType, when ``option`` takes it; ConfigError naming the choices otherwise."""
    choices = ", ".join(d.value for d in allowed)
    try:
        found = parse_choices(DType, [dtype], option.lstrip("-"), many=False)[0]
    except ConfigError:  # named with this use's choices, not every DType's
        raise ConfigError(
            f"unknown {option.lstrip('-')} {str(getattr(dtype, 'value', dtype))!r}; use one of: {choices}"
        ) from None
    if found not in allowed:
        raise ConfigError(f"{option} {found.value} is not available; use one of: {choices}")
    return found


class Oov(Choice):
    """What a word outside the vocabulary gets, in the benchmarks and in ``distill.load``."""

    STANDARD = "standard"
    PAPER = "paper"
    PIECES = "pieces"
    ALONE = "alone"

    @property
    def fallback(self) -> bool:
        """Whether the policy gives missing words a vector of the run's own (a run folder's sets only)."""
        return self in (Oov.PIECES, Oov.ALONE)

    @property
    def description(self) -> str:
        """What the policy does with an item whose word a set lacks: the one wording of help, reports and plots."""
        return OOV_DESCRIPTIONS[self]


OOV_DESCRIPTIONS = {
    Oov.STANDARD: "items with a missing word are skipped, coverage shown",
    Oov.PAPER: "a missing word gets the mean vector (Ethayarajh 2019)",
    Oov.PIECES: "a missing word gets the mean of its pieces' vectors from a run made with --pieces (the mean "
    "vector if none was seen)",
    Oov.ALONE: "a missing word is read alone by the run's model, in the set's layers",
}


class AlonePool(Choice):
    """Which tokens of a word read alone in its prompt make its reading (``--alone-pool`` takes the first and
    the last: the reading added at ``--alone-weight``)."""

    PIECES = "pieces"  # the word's own pieces, the prompt's left out (what runs read)
    LAST = "last"  # the word's last piece: the one a causal model reads after the whole word
    PROMPT = "prompt"  # every token of the prompt, the word's and the prompt's (special tokens left out)
    BOTH = "both"  # the sum of the two unit readings, the word's pieces and the whole prompt


#: Built-in prompts a word is read alone in (``--alone-template``); ``{word}`` stands for the word.
TEMPLATES = {
    "bare": "{word}",
    "meaning": "meaning: {word}",
    "word": 'the word "{word}"',
    "means": "{word} means",
    "define": "definition of {word}",
    "concept": "the concept of {word}",
}
WORD = "{word}"
#: The prompt an encoder reads words alone in unless told otherwise (benchmarks/alone_sweep.py and the whole
#: recipe, tuned, chose it on the dev sets); a causal LM's, whose byte-level pieces the quote of ``word`` splits.
ENCODER_TEMPLATE, CAUSAL_TEMPLATE = "word", "concept"


@dataclass(frozen=True)
class Template:
    """A prompt a word is read alone in: a built-in name of :data:`TEMPLATES` or free text holding ``{word}``
    once. Only the word's own pieces are pooled, never the prompt's. ``str()`` gives the option back."""

    text: str = WORD

    @classmethod
    def parse(cls, spec: Template | str) -> Template:
        """A built-in name (``meaning``) or free text (``"a {word}"``); ConfigError for anything else."""
        if isinstance(spec, Template):
            return spec
        text = TEMPLATES.get(str(spec).strip().lower(), str(spec))
        if text.count(WORD) != 1:
            names = ", ".join(TEMPLATES)
            raise ConfigError(f"alone template {spec!r} must hold {WORD} once, or be one of: {names}")
        return cls(text)

    def fill(self, word: str) -> tuple[str, int]:
        """The prompt for ``word`` and where the word starts in it."""
        at = self.text.index(WORD)
        return self.text[:at] + word + self.text[at + len(WORD) :], at

    def __str__(self) -> str:
        return next((name for name, text in TEMPLATES.items() if text == self.text), self.text)


class Effect(Choice):
    """What an option changes: read by the checkpoint (resume) and the table (reuse of a finished run)."""

    VECTORS = "vectors"  # the vectors themselves
    FILES = "files"  # extra outputs (and what the encoding pass keeps), not the layer sets' vectors
    NONE = "none"  # only how the run is watched, saved or spread
    AFTER = "after"  # a step on the finished sets (tuning): neither the encoding nor the sets depend on it


INPUT, SAMPLING, MODEL, OUTPUT, SCALE = "Input and vocabulary", "Sampling", "Model", "Output", "Scale"
#: The order of the panels in ``distill run --help``.
PANELS = (INPUT, SAMPLING, MODEL, OUTPUT, SCALE)


def option(default: Any, help: str, panel: str, effect: Effect = Effect.VECTORS, **extra: Any) -> Any:
    """A RunConfig field: its default, its ``--help`` line and panel, and what changing it changes."""
    metadata = {"help": help, "panel": panel, "effect": effect, **extra}
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable default")
    return dataclasses.field(default=default, metadata=metadata)


def parse_choices(kind: type[E], spec: str | Sequence[str | E], what: str, many: bool = True) -> tuple[E, ...]:
    """``"pc,mean"`` (or a sequence) -> enum members in the order given, each once; ConfigError otherwise."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    allowed = ("one or more of: " if many else "one of: ") + ", ".join(str(m.value) for m in kind)
    out: list[E] = []
    for part in parts:
        try:
            member = part if isinstance(part, kind) else kind(str(part).strip().lower())
        except ValueError as err:
            raise ConfigError(f"unknown {what} {str(part).strip()!r}; use {allowed}") from err
        if member not in out:
            out.append(member)
    if not out:
        raise ConfigError(f"no {what} given; use {allowed}")
    return tuple(out)


def parse_poolings(spec: str | Sequence[str | Pooling]) -> tuple[Pooling, ...]:
    """``"pc"``, ``"pc,mean"`` -> Pooling values, in the order given."""
    return parse_choices(Pooling, spec, "pooling")


def parse_formats(spec: str | Sequence[str | SetFormat]) -> tuple[SetFormat, ...]:
    """``"bin,txt"`` -> SetFormat values, in the order given; bin must be among them."""
    formats = parse_choices(SetFormat, spec, "format")
    if SetFormat.BIN not in formats:
        raise ConfigError("--formats must include bin: every distill command reads a run's sets from their binary file")
    return formats


def _unreadable(spec: Any) -> ConfigError:
    return ConfigError(f"cannot read layer spec {spec!r}; use an index (1), a list (1,3), a range (0-3) or all")


@dataclass(frozen=True)
class Layers:
    """Hidden states asked for (0 = embedding output, 1 = first layer), as Hugging Face numbers them; parsed
    once from the option, resolved once the model's depth is known. ``str()`` gives the option back."""

    indices: tuple[int, ...] | None = None  # sorted, each once; None: every hidden state ("all")

    @classmethod
    def parse(cls, spec: Layers | str | int | Sequence[int]) -> Layers:
        """``"1"``, ``"1,3"``, ``"0-3"``, ``"all"``, ``2`` or ``[0, 6]``; ConfigError for anything else."""
        if isinstance(spec, Layers):
            return spec
        if isinstance(spec, bool):
            raise _unreadable(spec)
        if isinstance(spec, int):
            items = [spec]
        elif isinstance(spec, (list, tuple)):
            items = [_layer_index(x, spec) for x in spec]
        elif str(spec).strip().lower() == "all":
            return cls(None)
        else:
            items = [i for part in str(spec).split(",") for i in _layer_range(part.strip(), spec)]
        if not items:
            raise ConfigError("no layer requested; use e.g. --layers 1")
        if min(items) < 0:
            raise ConfigError(f"layer {min(items)} is out of range: layers count from 0 (0 = embedding output)")
        return cls(tuple(sorted(set(items))))

    def resolve(self, n_layers: int) -> tuple[int, ...]:
        """The layer indices in a model of ``n_layers`` transformer layers; ConfigError for one beyond it."""
        if self.indices is None:
            return tuple(range(n_layers + 1))
        if self.indices[-1] > n_layers:
            raise ConfigError(
                f"layer {self.indices[-1]} is out of range: this model has hidden states 0..{n_layers} "
                "(0 = embedding output, 1 = first layer)"
            )
        return self.indices

    def __str__(self) -> str:
        if self.indices is None:
            return "all"
        first, last = self.indices[0], self.indices[-1]
        if len(self.indices) > 1 and self.indices == tuple(range(first, last + 1)):
            return f"{first}-{last}"
        return ",".join(map(str, self.indices))


def _layer_index(value: Any, spec: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _unreadable(spec)
    try:
        return int(value)
    except ValueError as err:
        raise _unreadable(spec) from err


def _layer_range(part: str, spec: Any) -> list[int]:
    try:
        lo, hi = (int(x) for x in part.split("-", 1)) if "-" in part[1:] else (int(part), int(part))
    except ValueError as err:
        raise _unreadable(spec) from err
    if lo > hi:
        raise ConfigError(f"layer range {part!r} runs backwards; write it low-high")
    return list(range(lo, hi + 1))


def best_layers(n_layers: int, causal: bool = False) -> Layers:
    """The layers of the recommended set: an encoder's upper third (4-6 of 6, 8-12 of 12), as the quality sweep
    chose; a causal LM's layers from a quarter to a third of the way up (8-10 of SmolLM2's 30), where its words
    score best: its upper layers are turned to predicting the next token (RESULTS.md, issue 34)."""
    if causal:
        first = max(1, -(-n_layers // 4))
        return Layers(tuple(range(first, max(first, n_layers // 3) + 1)))
    first = max(1, -(-2 * n_layers // 3))
    return Layers(tuple(range(min(first, n_layers), n_layers + 1)))


#: The model a command uses when none is named, by its hub id (a copy in the models folder serves it offline).
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class RunConfig:
    """Everything a distillation run depends on; ``manifest.json`` stores it, ``distill run`` exposes it."""

    model: str = option(
        DEFAULT_MODEL,
        "Hub id, local folder, or alias (bert, bert-uncased, gpt2, roberta, minilm, smollm2, mpnet).",
        MODEL,
    )
    corpus: tuple[str, ...] = option(
        (),
        "Text file(s), one sentence or paragraph per line; .gz, .bz2 and .xz are read; a folder gives its text files; "
        "- reads stdin. Streamed, never loaded whole. Repeat for several. Default: the paper's STS sentences.",
        INPUT,
    )
    out: str | None = option(None, "Output folder. Default: outputs/<model>-<corpus>.", OUTPUT, Effect.NONE)
    layers: Layers = option(
        Layers((1,)), "Hidden states to keep: 1, 1,3, 0-3 or all (0 = embedding output).", MODEL, cli_type=str
    )
    pooling: tuple[Pooling, ...] = option(
        (Pooling.PC,), "pc (first principal component, the paper's), mean, or both: pc,mean.", OUTPUT, cli_type=str
    )
    formats: tuple[SetFormat, ...] = option(
        ALL_FORMATS,
        "The files of each set: txt (word2vec text), bin (word2vec binary: every distill command reads a set from "
        "it, so it is always written), faiss (a flat FAISS index; distill neighbors builds one where it is "
        "missing). bin alone is under a fifth of the bytes of all three: for runs of many layers.",
        OUTPUT,
        Effect.FILES,
        cli_type=str,
    )
    min_count: int = option(5, "Keep words seen at least this often.", INPUT)
    max_vocab: int | None = option(None, "Keep at most this many most frequent words.", INPUT)
    vocab_file: str | None = option(None, "Word list (one per line): distil exactly these words.", INPUT)
    lowercase: bool | None = option(
        None,
        "Fold case when building the vocabulary. Default: follow the model (lowercase for uncased models).",
        INPUT,
        flag="--lowercase/--keep-case",
    )
    alpha_only: bool = option(
        True, "Only alphabetic words enter the vocabulary.", INPUT, flag="--alpha-only/--any-word"
    )
    split_sentences: bool = option(
        False,
        "Read each line as its sentences (split after . ! ?), each encoded alone: for a corpus of paragraphs.",
        INPUT,
        flag="--split-sentences/--whole-lines",
    )
    encoding_errors: EncodingErrors = option(
        EncodingErrors.STRICT, "strict: stop at bytes that are not UTF-8; replace: use U+FFFD.", INPUT
    )
    max_occurrences: int = option(200, "Occurrences per word, sampled (seeded) when a word has more.", SAMPLING)
    seed: int = option(0, "Seed of the occurrence sample; same seed, same vectors.", SAMPLING)
    sampling: Sampling = option(
        Sampling.UNIFORM,
        "uniform: each word's occurrences drawn from all of the corpus. greedy: a seeded streaming shuffle "
        "of the lines, encoding only lines that hold a word still short of its occurrences, stopping when "
        "all are full: far fewer tokens encoded on a large corpus.",
        SAMPLING,
    )
    shuffle_buffer: int = option(100_000, "greedy: lines held by the streaming shuffle.", SAMPLING)
    batch_size: int = option(
        64, "Sentences per forward pass (length-sorted); given, batches are of sentences on a GPU too.", MODEL
    )
    batch_tokens: int | None = option(
        None,
        "Padded tokens per forward pass: length-bucketed batches of up to this many tokens instead of "
        "--batch-size sentences (0: off). Default: 32768 on a GPU, off on a CPU.",
        MODEL,
    )
    max_length: int | None = option(
        None, "Tokens per window; longer sentences are split into windows. Default: the model's maximum, at most 512.",
        MODEL,
    )  # fmt: skip
    stride: int = option(32, "Tokens shared by consecutive windows of a long sentence.", MODEL)
    context_share: float = option(
        0.0,
        "Add S times the mean state of each occurrence's sentence (its window's text tokens) to the occurrence's "
        "vector, in every layer: a word's vector then holds a share of the meaning of its contexts (words the "
        "corpus lacks, from their pieces or read alone, get none). 0: off (the paper's vectors).",
        MODEL,
    )
    device: str = option("auto", "auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps.", MODEL)
    dtype: DType = option(
        DType.AUTO,
        "auto (bfloat16/float16 on a GPU, float32 on a CPU), float32, float16 (GPUs only) or bfloat16 (fast on "
        "CPUs with AMX: see benchmarks/RESULTS.md).",
        MODEL,
        cli_type=str,
    )
    gguf_file: str | None = option(
        None, "GGUF weights file inside the model folder (transformers' GGUF loading).", MODEL
    )
    revision: str | None = option(None, "Hub revision (branch, tag or commit).", MODEL)
    normalize: bool = option(False, "L2-normalise every output vector.", OUTPUT)
    model_words: bool = option(
        False,
        "Also give a vector to every whole-word token of the model's vocabulary that the corpus did not: the "
        "model's states of the word read alone (counted 0 in vocab.tsv).",
        INPUT,
    )
    best: bool = option(
        False,
        "Also write the recommended set (benchmarks/quality_sweep.py): the mean vectors of the upper third of "
        "the layers, averaged (layers4-6.mean for a 6-layer model); for a causal LM, of the layers a quarter to a "
        "third of the way up (layers8-10.mean for SmolLM2's 30); --best-layers chooses others.",
        OUTPUT,
        Effect.FILES,
    )
    best_layers: Layers | None = option(
        None,
        "With --best: the layers the recommended set averages instead (1,3, 3-6 ...; encoded too), named "
        "layers3_6.mean for 3,6.",
        OUTPUT,
        Effect.FILES,
        cli_type=str,
    )
    alone_weight: float = option(
        0.0,
        "With --best: add W times each word's reading alone by the model (its unit vector, in the set's layers) "
        "to its unit corpus vector in the recommended set, named layers4-6.mean.aloneW. Words the corpus lacks, "
        "read alone (--oov alone), then lie where the set's words lie. 0: off.",
        OUTPUT,
        Effect.FILES,
    )
    language_words: int = option(
        0,
        "With --best: the recommended set also holds the words it lacks among the N most frequent of English "
        "(the wordfreq package's list, about 320,000 at most), each read alone by the model, so that a plain "
        'word2vec file covers what users look up (pip install "distill[lexicon]"). 0: off.',
        OUTPUT,
        Effect.FILES,
    )
    alone_template: Template | None = option(
        None,
        "The prompt a word is read alone in (--model-words, --alone-weight, --oov alone): a built-in ("
        + ", ".join(TEMPLATES)
        + f") or text holding {{word}} once; only the word's own pieces are pooled. Default: {ENCODER_TEMPLATE} "
        f"for an encoder, {CAUSAL_TEMPLATE} for a causal LM (whose byte-level pieces the quote of "
        f"{ENCODER_TEMPLATE} splits).",
        MODEL,
        cli_type=str,
    )
    alone_pool: AlonePool = option(
        AlonePool.PIECES,
        "What --alone-weight adds: the reading of the word's own pieces in its prompt (pieces), or the sum of "
        "that and the reading of the whole prompt, its tokens pooled too (both). A word the corpus lacks keeps "
        "its pieces' reading as its vector, and gets the same added.",
        OUTPUT,
        Effect.FILES,
        cli_type=str,  # pieces or both: the pool's other values are encode_alone's, for the sweeps
    )
    analyze: bool = option(
        False, "Also measure how contextual each layer is (see distill analyze --help).", OUTPUT, Effect.FILES
    )
    pieces: bool | None = option(
        None,
        "Also average a vector for every piece of the model's vocabulary (layerL.pieces.npz): any word outside "
        "the vocabulary then gets the mean of its pieces' vectors, in the same space, in neighbors, evaluate "
        "--oov pieces and the sentence exports. Default: on, except for ELMo (every word has its own vector) "
        "and --engine ray.",
        OUTPUT,
        Effect.FILES,
        flag="--pieces/--no-pieces",
    )
    teacher: bool = option(
        False,
        "Also keep the model's own sentence embedding of every encoded sentence (teacher.npz; its "
        "sentence-transformers pooling), for distill tune. Runs every layer of the model.",
        OUTPUT,
        Effect.FILES,
    )
    teacher_bags: int = option(
        0,
        "With --teacher: also keep the model's sentence embedding of N seeded bags of 5 to 15 words drawn from "
        "English's 50,000 most frequent (wordfreq; by the square root of their frequency), as more targets for "
        'distill tune: the words the corpus lacks or has few of, in company (pip install "distill[lexicon]"). '
        "0: off.",
        OUTPUT,
        Effect.FILES,
    )
    teacher_texts: str | None = option(
        None,
        "With --teacher: also keep the model's sentence embedding of each non-empty line of this text file (.gz, "
        ".bz2, .xz read), as more sentences for distill tune: text like what the model will embed (queries, "
        "titles, questions), none of an evaluation's. Read after the corpus, before the bags.",
        OUTPUT,
        Effect.FILES,
    )
    bag_topics: float = option(
        0.0,
        "With --teacher-bags: put each bag on one topic, as a sentence is: a seed word, then this share of the "
        "bag drawn from its 30 nearest words (the model reading each of the 50,000 words alone, cosine). 0: bags "
        "of unrelated words.",
        OUTPUT,
        Effect.FILES,
    )
    tune_blend: float | None = option(
        None,
        "With --best and --teacher: then tune the recommended set toward the teacher's embeddings and recommend "
        "the tuned set, keeping this share of the trained change (as distill tune --set best --blend B "
        "--recommend, seeded by --seed). Stopped while it tunes, the same command goes on from the finished "
        "encoding. Default: off.",
        OUTPUT,
        Effect.AFTER,
    )
    store_dtype: DType = option(
        DType.AUTO,
        "Numbers in the occurrence store: float32, float16 (half the memory and disk), or auto (float16 when "
        "float32 would take over half the available memory).",
        SCALE,
        cli_type=str,
    )
    store: StoreKind = option(
        StoreKind.AUTO,
        "Where occurrence vectors wait for the reduction: memory (saved to OUT/.distill-work at each "
        "checkpoint), disk (files in OUT/.distill-work, read through the page cache), device (a tensor in "
        "the GPU's memory, or pinned host memory when it does not fit; reduced there), or auto (device on a "
        "GPU, else memory when the store takes at most a third of the available memory, else disk).",
        SCALE,
        Effect.NONE,
    )
    chunk_size: int = option(4096, "Sentences tokenized and length-sorted together; the unit of a checkpoint.", SCALE)
    checkpoint_every: float = option(
        300.0,
        "Seconds between checkpoints of the encoding pass (0: after every chunk). A killed run goes on from its "
        "last checkpoint; a run shorter than this writes none.",
        SCALE,
        Effect.NONE,
    )
    resume: bool = option(
        True,
        "Go on from the checkpoint a killed or interrupted run with the same options and corpus left in "
        "OUT/.distill-work, and leave as it is a finished run in OUT that these options would make again (the same "
        "local model and corpus by content, its files as written); --restart distils afresh.",
        SCALE,
        Effect.NONE,
        flag="--resume/--restart",
    )
    engine: Engine = option(
        Engine.LOCAL, "local, or ray: encode on Ray Data actors (one per GPU, or per CPU worker).", SCALE, Effect.NONE
    )
    tokenize_workers: int | None = option(
        None,
        "Processes that count the corpus, find the sampled sentences and tokenize them ahead of the model (0: "
        "this process does it). Default: on a GPU the cores but two (at most 16), on a CPU none (its cores run the "
        "model).",
        SCALE,
        Effect.NONE,
    )
    workers: int | None = option(None, "Ray encoder actors. Default: the GPUs, else half the CPUs.", SCALE, Effect.NONE)
    progress: bool = option(True, "Show progress (bars on a terminal, a line every few seconds in a log).", OUTPUT,
                            Effect.NONE)  # fmt: skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "alone_pool", parse_alone_pool(self.alone_pool))
        for name, kind in enum_fields().items():
            value = getattr(self, name)
            if not isinstance(value, kind):
                object.__setattr__(self, name, parse_choices(kind, [value], name.replace("_", " "), many=False)[0])
        corpus: Any = self.corpus  # one path given alone is one input, not a sequence of characters
        object.__setattr__(
            self, "corpus", (str(corpus),) if isinstance(corpus, (str, Path)) else tuple(map(str, corpus))
        )
        object.__setattr__(self, "pooling", parse_poolings(self.pooling))
        object.__setattr__(self, "formats", parse_formats(self.formats))
        object.__setattr__(self, "layers", Layers.parse(self.layers))
        if self.best_layers is not None:
            object.__setattr__(self, "best_layers", Layers.parse(self.best_layers))
        if self.alone_template is not None:
            object.__setattr__(self, "alone_template", Template.parse(self.alone_template))
        if self.batch_tokens is None and _given(self, "batch_size"):  # sentences a batch, on a GPU too
            object.__setattr__(self, "batch_tokens", 0)
        check_config(self)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key, value in data.items():
            if isinstance(value, enum.Enum):
                data[key] = value.value
        data["pooling"] = [p.value for p in self.pooling]
        data["formats"] = [f.value for f in self.formats]
        data["layers"] = str(self.layers)
        data["best_layers"] = None if self.best_layers is None else str(self.best_layers)
        data["alone_template"] = None if self.alone_template is None else str(self.alone_template)
        data["corpus"] = list(self.corpus)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        data = dict(data)
        data["corpus"] = tuple(data.get("corpus", ()))
        data["pooling"] = tuple(data.get("pooling", ("pc",)))
        data["formats"] = tuple(data.get("formats", ALL_FORMATS))  # a run made before --formats wrote all three
        return cls(**data)

    def for_model(self, positions: int | None, elmo: bool, causal: bool = False) -> RunConfig:
        """The options checked against the model (``positions``: the tokens it reads; ``elmo``: it reads
        characters; ``causal``: it reads left to right), with the defaults that depend on it resolved: the piece
        vectors on where a run can make them, the prompt words are read alone in by the model's kind."""
        if self.max_length is not None and positions and self.max_length > positions:
            raise ConfigError(
                f"--max-length {self.max_length} is more than this model reads: at most {positions} tokens"
            )
        window = self.max_length or min(512, positions or 256)
        if self.stride >= window // 2:
            raise ConfigError(
                f"--stride {self.stride} must be under half the window of {window} tokens; lower it "
                "or raise --max-length"
            )
        if elmo and self.pieces:
            raise ConfigError("ELMo reads characters, so every word already has its own vector: drop --pieces")
        pieces = not elmo and self.engine is Engine.LOCAL if self.pieces is None else self.pieces
        template = self.alone_template or Template.parse(CAUSAL_TEMPLATE if causal else ENCODER_TEMPLATE)
        return dataclasses.replace(self, pieces=pieces, alone_template=template)

    @property
    def template(self) -> Template:
        """The prompt words are read alone in, once :meth:`for_model` resolved its default."""
        if self.alone_template is None:
            raise RuntimeError("the alone template is resolved by for_model, which was not called")
        return self.alone_template

    def without(self, *effects: Effect) -> dict[str, Any]:
        """The JSON options, leaving out those whose change has one of ``effects``."""
        dropped = {f.name for f in dataclasses.fields(self) if f.metadata.get("effect") in effects}
        return {k: v for k, v in self.to_json().items() if k not in dropped}


#: The most --teacher-bags: every bag's embedding is held in memory until the run is written.
MAX_TEACHER_BAGS = 5_000_000

#: Padded tokens per batch on a GPU when --batch-tokens is not given: enough work per kernel launch.
GPU_BATCH_TOKENS = 32_768


def token_budget(batch_tokens: int | None, device: Any) -> int | None:
    """The padded tokens per batch for ``--batch-tokens`` on ``device`` (a torch.device): None for batches of
    ``--batch-size`` sentences (the CPU default, where 64 short sentences are fastest)."""
    if batch_tokens is not None:
        return batch_tokens or None
    return GPU_BATCH_TOKENS if device.type == "cuda" else None


@functools.cache
def enum_fields() -> dict[str, type[enum.Enum]]:
    """RunConfig's fields that hold one choice, and their enum."""
    hints = typing.get_type_hints(RunConfig)
    return {name: kind for name, kind in hints.items() if isinstance(kind, type) and issubclass(kind, enum.Enum)}


def _positive(name: str, value: int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")


_KINDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


def _matches(value: Any, kind: Any) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, kind)


def _check_types(config: RunConfig) -> None:
    """Scalar options hold what their field says (the Python API takes anything)."""
    for name, hint in typing.get_type_hints(RunConfig).items():
        args = typing.get_args(hint)
        optional = type(None) in args
        kind = next((a for a in args if a is not type(None)), hint) if optional else hint
        if kind not in _KINDS:
            continue
        value = getattr(config, name)
        if not (value is None and optional) and not _matches(value, kind):
            raise ConfigError(f"--{name.replace('_', '-')} must be {_KINDS[kind]}, got {value!r}")


def _check_numbers(config: RunConfig) -> None:
    for name in ("min_count", "max_occurrences", "batch_size", "chunk_size", "shuffle_buffer"):
        _positive(name, getattr(config, name))
    for name in ("batch_tokens", "tokenize_workers", "language_words", "teacher_bags"):
        if getattr(config, name) is not None and getattr(config, name) < 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be 0 (off) or more, not {getattr(config, name)}")
    if config.teacher_bags > MAX_TEACHER_BAGS:
        raise ConfigError(
            f"--teacher-bags {config.teacher_bags:,} is over {MAX_TEACHER_BAGS:,}: every bag's embedding stays in "
            "memory until the run is written"
        )
    for name in ("max_vocab", "workers", "max_length"):
        _positive(name, getattr(config, name), allow_none=True)
    _check_ranges(config)
    if config.checkpoint_every < 0:
        raise ConfigError(f"--checkpoint-every must be >= 0 seconds, got {config.checkpoint_every}")
    if config.max_length is not None and config.max_length < 8:
        raise ConfigError(f"--max-length {config.max_length} is too short; use at least 8 tokens")
    if config.stride < 0:
        raise ConfigError(f"--stride must be >= 0, got {config.stride}")
    if config.max_length is not None and config.stride >= config.max_length // 2:
        raise ConfigError(f"--stride {config.stride} must be under half of --max-length {config.max_length}")


def _given(config: RunConfig, name: str) -> bool:
    """Whether option ``name`` differs from its default."""
    return bool(getattr(config, name) != next(f.default for f in dataclasses.fields(RunConfig) if f.name == name))


def _check_unused(config: RunConfig) -> None:
    """Options that another choice leaves without effect: refused, not silently ignored."""
    if config.batch_tokens and _given(config, "batch_size"):
        raise ConfigError("--batch-size and --batch-tokens both size the batches: give one")
    if _given(config, "shuffle_buffer") and config.sampling is not Sampling.GREEDY:
        raise ConfigError("--shuffle-buffer sizes the shuffle of --sampling greedy: add it, or leave the buffer out")
    if config.workers is not None and config.engine is not Engine.RAY:
        raise ConfigError("--workers sets the encoder actors of --engine ray: add it (the local engine's worker "
                          "processes: --tokenize-workers)")  # fmt: skip


def _check_ranges(config: RunConfig) -> None:
    if config.seed < 0:
        raise ConfigError(f"--seed must be 0 or more, got {config.seed}")
    for name, most in (("alone_weight", 100), ("bag_topics", 1)):
        if not 0 <= (value := getattr(config, name)) <= most:
            raise ConfigError(f"--{name.replace('_', '-')} must be between 0 (off) and {most}, not {value}")
    if not -1 <= config.context_share <= 10:
        raise ConfigError(f"--context-share must be between -1 and 10, not {config.context_share}")
    if config.tune_blend is not None and not 0 < config.tune_blend <= 1:
        raise ConfigError(f"--tune-blend must be above 0 and at most 1, not {config.tune_blend}")


def check_device_name(device: str) -> None:
    """ConfigError unless ``device`` is a name ``--device`` takes (whether this machine has it is checked where
    the device is resolved)."""
    if device not in {"auto", "cpu", "mps", "cuda"} and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise ConfigError(f"unknown device {device!r}; use auto, cpu, cuda, cuda:N or mps")


def _check_device(config: RunConfig) -> None:
    check_dtype(config.dtype, MODEL_DTYPES, "--dtype")
    check_dtype(config.store_dtype, STORE_DTYPES, "--store-dtype")
    device = config.device
    check_device_name(device)
    if config.dtype is DType.FLOAT16 and device in {"cpu", "auto"}:
        import torch

        if device == "cpu" or not torch.cuda.is_available():
            raise ConfigError("--dtype float16 is for GPUs; on a CPU use float32, or bfloat16 on a CPU with AMX")


def _check_paths(config: RunConfig) -> None:
    for path in config.corpus:
        if path != "-" and not Path(path).exists():
            raise ConfigError(
                f"corpus file {path} does not exist; pass text files (one sentence per line), folders of them, or -"
            )
    if config.corpus.count("-") > 1:
        raise ConfigError("stdin (-) can be read once; give it once in --corpus")
    files = {"vocabulary file": (config.vocab_file, "word"), "--teacher-texts file": (config.teacher_texts, "text")}
    for what, (given, each) in files.items():
        if given is not None and not Path(given).is_file():
            missing = "does not exist" if not os.path.lexists(given) else "is not a regular file"
            raise ConfigError(f"{what} {given} {missing}; give a file with one {each} per line")


def parse_alone_pool(spec: AlonePool | str) -> AlonePool:
    """``--alone-pool``: pieces or both (the pool's other values are ``encode_alone``'s, for the sweeps)."""
    value = str(spec.value if isinstance(spec, AlonePool) else spec).strip().lower()
    if value not in (AlonePool.PIECES.value, AlonePool.BOTH.value):
        raise ConfigError(f"--alone-pool must be pieces or both, not {value!r}")
    return AlonePool(value)


def check_alone_pool(pool: AlonePool, weight: float) -> None:
    """``--alone-pool``: the reading added at ``--alone-weight``, so ``both`` needs a weight."""
    if pool is AlonePool.BOTH and not weight:
        raise ConfigError("--alone-pool both adds the whole prompt's reading at --alone-weight: give a weight above 0")


def check_config(config: RunConfig) -> None:
    """Every check that needs no model and no corpus read, so bad options fail in milliseconds."""
    _check_types(config)
    _check_numbers(config)
    _check_device(config)
    _check_paths(config)
    if config.language_words and not config.best:
        raise ConfigError("--language-words adds words to the recommended set: add --best")
    if config.best_layers is not None and not config.best:
        raise ConfigError("--best-layers chooses the recommended set's layers: add --best")
    if config.alone_weight and not config.best:
        raise ConfigError("--alone-weight adds each word's reading alone to the recommended set: add --best")
    check_alone_pool(config.alone_pool, config.alone_weight)
    _check_unused(config)
    if config.tune_blend is not None and not (config.best and config.teacher):
        raise ConfigError("--tune-blend tunes the recommended set toward the teacher: add --best and --teacher")
    if config.teacher_bags and not config.teacher:
        raise ConfigError("--teacher-bags adds to the teacher's embeddings: add --teacher")
    if config.teacher_texts and not config.teacher:
        raise ConfigError("--teacher-texts adds to the teacher's embeddings: add --teacher")
    if config.bag_topics and not config.teacher_bags:
        raise ConfigError("--bag-topics puts the teacher's bags on topics: add --teacher-bags N")
    if config.teacher_bags or config.language_words:  # before the encoding, not after it
        check_installed("wordfreq", "lexicon", "--teacher-bags (0: off)" if config.teacher_bags else "--language-words")
    if config.engine is Engine.RAY and (config.pieces or config.teacher):
        raise ConfigError("--pieces and --teacher are not available with --engine ray; run with --engine local")
