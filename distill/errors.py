"""The errors a user can fix: the CLI prints their message on one line and exits 2."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


class DistillError(Exception):
    """An error the user can fix; the CLI prints its message on one line and exits 2."""


class ConfigError(DistillError, ValueError):
    """Bad input or option: the message says what is wrong and how to fix it."""


class OutputError(DistillError, OSError):
    """An output could not be written (no permission, disk full); nothing half-written is left."""


class NothingCovered(ValueError):
    """A benchmark none of whose items the vectors cover: a score of nothing, not an error of the run."""


def check_installed(module: str, extra: str, purpose: str) -> None:
    """:func:`require`'s error, without the import: for options checked before a long run."""
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f'{purpose} needs the package {module}: pip install "distill[{extra}]"')


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import an optional dependency, or say which extra installs it (``pip install "distill[extra]"``)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(
            f'{purpose} needs the package {module.split(".")[0]}: pip install "distill[{extra}]"'
        ) from err
