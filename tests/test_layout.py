"""The package's shape: no import circles, no lower module importing the orchestrators, short functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "distill"
#: Only these know the whole chain; nothing else may import them (but the entry points: the package's
#: public API, which loads the pipeline on first use, and ``python -m distill``).
ORCHESTRATORS = ("distill.pipeline", "distill.production", "distill.cli")
ENTRY_POINTS = ("distill", "distill.__main__", "distill.api")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The distill modules ``path`` imports, at any depth of the file (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found |= {n for n in names if n in modules} or ({node.module} & modules.keys())
            found |= {node.module} & modules.keys()
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names} & modules.keys()
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_scan_finds_a_circle_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle():
    graph = _graph()
    assert len(graph) > 30
    assert _cycle(graph) is None


def _package(module: str) -> str:
    """``distill.serve`` for ``distill.serve.export``; a top-level module (or the package itself) is its own."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def _mutual(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of packages each of which imports the other, from a module graph (function-level imports count)."""
    packages: dict[str, set[str]] = {}
    for name, imported in graph.items():
        packages.setdefault(_package(name), set()).update(_package(m) for m in imported)
    return sorted({(a, b) for a, deps in packages.items() for b in deps if a < b and a in packages.get(b, set())})


def test_the_package_scan_finds_two_packages_that_import_each_other():
    graph = {"distill.a.x": {"distill.b.y"}, "distill.b.y": set(), "distill.b.z": {"distill.a.w"}, "distill.a.w": set()}
    assert _mutual(graph) == [("distill.a", "distill.b")]
    assert _mutual({"distill.a.x": {"distill.b.y"}, "distill.b.y": {"distill.c"}, "distill.c": set()}) == []


def test_no_package_imports_a_package_that_imports_it_back():
    pairs = _mutual(_graph())
    assert not pairs, "packages that import each other: " + ", ".join(f"{a} <-> {b}" for a, b in pairs)


def test_only_cli_and_pipeline_import_the_orchestrators():
    for name, imported in _graph().items():
        if name.startswith(ORCHESTRATORS) or name in ENTRY_POINTS:
            continue
        bad = {m for m in imported if m.startswith(ORCHESTRATORS)}
        assert not bad, f"{name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_over_80_lines(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno < 80, (
                f"{path.name}: {node.name} has {node.end_lineno - node.lineno + 1} lines"
            )


def test_the_public_api_is_never_shadowed_by_a_submodule():
    """``distill.derive`` was the package of derived sets once anything imported it (``distill.run`` does), so
    ``distill.derive(...)`` failed: no submodule may bear a name of the API."""
    import subprocess
    import sys

    import distill

    api = [name for name in distill.__all__ if name[0].islower() and name != "run_pipeline"]
    code = "import distill, distill.pipeline, distill.production, distill.cli\n" + "".join(
        f"assert callable(distill.{name}), {name!r}\n" for name in api
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not {name for name in api if (PACKAGE / name).exists() or (PACKAGE / f"{name}.py").exists()}
