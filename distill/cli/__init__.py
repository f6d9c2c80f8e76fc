"""The ``distill`` command: options -> a config -> one library call -> a short summary."""

from distill.cli import evaluate, run  # noqa: F401  (each module registers its commands on the app)
from distill.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
