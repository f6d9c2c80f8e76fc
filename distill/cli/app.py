"""The typer app every command registers on, and how the CLI reports errors and logs."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from distill.errors import DistillError

app = typer.Typer(
    help=(
        "Distil static word vectors from a contextual language model (Ethayarajh 2019): every vocabulary "
        "word's sampled occurrences go through the model once, and each word's occurrence matrix is "
        "reduced to one vector (first principal component or mean). Outputs load in gensim and FAISS."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib import metadata

        typer.echo(f"distill {metadata.version('distill')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Distil static word vectors from a contextual language model (Ethayarajh 2019)."""


ProgressOpt = Annotated[
    bool, typer.Option(help="Show progress (bars on a terminal, a line every few seconds in a log).")
]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log each stage.")]


def setup_logging(verbose: bool, progress: bool = True) -> None:
    """Log level and third-party noise; no Hugging Face progress bars in a log or with --no-progress."""
    if not progress or not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # read when transformers is imported
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("transformers", "huggingface_hub", "urllib3", "gensim", "faiss"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """A :class:`DistillError` becomes one line on stderr and exit code 2; Ctrl-C one line and 130."""
    try:
        yield
    except DistillError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as err:
        typer.echo(str(err) or "interrupted", err=True)
        raise typer.Exit(130) from None


#: How ``--help`` names the kind of value an option takes (typer's own names are Python types).
_KINDS = {"str": "TEXT", "list[str]": "TEXT", "int": "INTEGER", "int range": "INTEGER", "float": "NUMBER",
          "float range": "NUMBER", "path": "PATH", "bool": ""}  # fmt: skip


def _kind(param: Any, ctx: Any) -> str:
    """``TEXT``, ``INTEGER``, ``[pc|mean]`` ... for typer's ``<str>``, ``<int>``, ``<pc|mean>`` ...; "" for a flag."""
    kind = (type(param).display_type_rich(param, ctx) or "").strip("<>").removesuffix("...").strip("<>")
    return _KINDS.get(kind, f"[{kind}]" if "|" in kind else kind.upper())


def _tidy(param: Any, ctx: Any) -> None:
    """One parameter's metavar as command-line tools spell it; an argument is named in capitals."""
    if isinstance(param, typer.core.TyperArgument):
        name = (param.name or "arg").upper() + ("..." if param.nargs != 1 else "")
        kind = _kind(param, ctx)
        param.metavar = name
        setattr(param, "_usage_display_name", lambda: name)  # noqa: B010  (typer would write {name})
        setattr(param, "display_type_rich", lambda ctx: kind)  # noqa: B010  (typer ignores an argument's metavar)
    else:
        param.metavar = _kind(param, ctx)


def _plain_help(commands: list[Any]) -> None:
    """Every parameter's help shown as written: typer renders help through rich, which would read the
    ``[lexicon]`` of ``distill[lexicon]`` as a style tag and drop it."""
    if not typer.core.HAS_RICH:
        return
    from rich.markup import escape

    for sub in commands:
        for param in sub.params:
            if getattr(param, "help", None):
                param.help = escape(param.help)


def tidy_help(command: Any) -> None:
    """Metavars as command-line tools spell them (``TEXT``, ``INTEGER``, ``[pc|mean]``, nothing for a flag,
    arguments by name: ``VECTORS WORDS...``) where typer shows ``<list[str]>``, ``<bool>`` and ``{vectors}``;
    for every command, the group and each ``--help``. An older typer, which has no ``display_type_rich``, keeps
    click's metavars, already spelt so. Help text is shown as written (:func:`_plain_help`). Once per command."""
    commands = [command, *command.commands.values()]
    _plain_help(commands)
    if not hasattr(typer.core.TyperOption, "display_type_rich"):
        return
    for sub in commands:
        ctx = typer.Context(sub)
        for param in sub.params:
            _tidy(param, ctx)
        get_help_option = sub.get_help_option

        def tidy_help_option(ctx: Any, get: Any = get_help_option) -> Any:
            option = get(ctx)
            if option is not None:
                option.metavar = ""
            return option

        sub.get_help_option = tidy_help_option
