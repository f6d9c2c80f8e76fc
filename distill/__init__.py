"""distill: static word vectors from contextual language models (Ethayarajh 2019)."""

from distill.config import ConfigError, DistillError, OutputError, Pooling, RunConfig
from distill.pipeline import RunResult, load, run, run_pipeline

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DistillError",
    "OutputError",
    "Pooling",
    "RunConfig",
    "RunResult",
    "__version__",
    "load",
    "run",
    "run_pipeline",
]
