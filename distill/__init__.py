"""distill: static word vectors from contextual language models (Ethayarajh 2019)."""

from typing import Any

from distill.config import Layers, Oov, Pooling, RunConfig
from distill.errors import ConfigError, DistillError, OutputError

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DistillError",
    "Layers",
    "Oov",
    "OutputError",
    "Pooling",
    "RunConfig",
    "RunResult",
    "__version__",
    "derive",
    "evaluate",
    "export",
    "load",
    "run",
    "run_pipeline",
]


def __getattr__(name: str) -> Any:
    """The pipeline (torch, transformers) and gensim are imported on first use, so serving code stays light."""
    if name in ("run", "load", "derive", "export", "evaluate"):
        from distill import api

        return getattr(api, name)
    if name in ("run_pipeline", "RunResult"):
        from distill import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'distill' has no attribute {name!r}")
