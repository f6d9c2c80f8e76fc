"""The ``distill`` command: options -> a config -> one library call -> a short summary."""

# isort: off
# each module registers its commands on the app, in the order distill --help lists them: run's first
from distill.cli import run  # noqa: F401
from distill.cli import evaluate  # noqa: F401

# isort: on
from distill.cli.app import app, tidy_help


def main() -> None:
    import typer

    command = typer.main.get_command(app)
    tidy_help(command)  # type: ignore[arg-type]
    command(prog_name="distill")


__all__ = ["app", "main"]
