"""The ``distill`` command: options -> a config -> one library call -> a short summary."""

# isort: off
# each module registers its commands on the app, in the order distill --help lists them: run's first
from distill.cli import run  # noqa: F401
from distill.cli import evaluate  # noqa: F401

# isort: on
from distill.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
