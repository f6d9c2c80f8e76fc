"""``distill run``'s options, generated from :class:`RunConfig`'s fields: each default, help line and panel is
written once, on the field, and typer lists and checks every choice."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Optional

import typer

from distill.config import PANELS, RunConfig


@functools.cache
def _fields() -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(RunConfig)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(RunConfig)}


def _cli_type(f: dataclasses.Field[Any], hint: Any) -> Any:
    """The type typer parses: enums as they are, tuples of paths as lists, comma lists as strings."""
    if "cli_type" in f.metadata:
        return f.metadata["cli_type"]
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return Optional[inner]  # typer reads typing.Optional
    if typing.get_origin(hint) is tuple:
        item: Any = args[0]
        return Optional[list[item]]
    return hint


def parameters(names: Sequence[str] | None = None, **defaults: Any) -> list[inspect.Parameter]:
    """Keyword parameters for RunConfig's fields ``names`` (all but ``progress`` by default); ``defaults``
    overrides a field's default for one command."""
    out = []
    ordered = sorted(_fields().items(), key=lambda item: PANELS.index(item[1][0].metadata["panel"]))
    for name, (f, hint) in ordered:
        if (names is None and name == "progress") or (names is not None and name not in names):
            continue
        decls = [f.metadata["flag"]] if "flag" in f.metadata else []
        cli_type = _cli_type(f, hint)
        default = defaults.get(name, f.default)
        if typing.get_origin(hint) is tuple and "cli_type" not in f.metadata:
            default = None
        elif "cli_type" in f.metadata and isinstance(default, tuple):
            default = ",".join(d.value if isinstance(d, enum.Enum) else str(d) for d in default)
        elif "cli_type" in f.metadata and default is not None:
            default = default.value if isinstance(default, enum.Enum) else str(default)  # as the option spells it
        option = typer.Option(*decls, help=f.metadata["help"], rich_help_panel=f.metadata["panel"])
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=Annotated[cli_type, option]))  # fmt: skip
    return out


def config_from(options: dict[str, Any], **fixed: Any) -> RunConfig:
    """A RunConfig from the parsed options (those that are RunConfig fields) and ``fixed`` values."""
    fields = _fields()
    values = {k: v for k, v in options.items() if k in fields}
    for name, value in values.items():
        if typing.get_origin(fields[name][1]) is tuple and value is None:
            values[name] = ()
    return RunConfig(**values, **fixed)


def with_parameters(params: list[inspect.Parameter]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a ``**options`` command the signature typer reads its options from."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for p in inspect.signature(fn).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        hints = typing.get_type_hints(fn, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in own]
        positional = [p for p in own if p.default is inspect.Parameter.empty]
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p not in positional]
        fn.__signature__ = inspect.Signature(positional + params + keyword)  # type: ignore[attr-defined]
        fn.__annotations__ = {}
        return fn

    return wrap
