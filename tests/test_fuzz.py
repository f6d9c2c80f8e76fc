"""Random manifests, truncated files and random option values fed to every command that reads a run folder:
each exits 0 or 2 (one line), never with a traceback, and nothing outside the folder changes."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import distill
from distill.cli import app

from .conftest import TINY_CORPUS

#: Examples per test: a few in CI (the same ones every run), more with DISTILL_FUZZ_EXAMPLES=N (random ones).
_EXAMPLES = os.environ.get("DISTILL_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(_EXAMPLES or 12), deadline=None, derandomize=_EXAMPLES is None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip

#: Commands that read a run folder ({run}), each cheap on the tiny model.
COMMANDS = [
    ["neighbors", "{run}", "king", "zzyzx", "-k", "2"],
    ["neighbors", "{run}", "king", "--index", "hnsw"],
    ["export", "{run}", "--format", "npy,word2vec"],
    ["export", "{run}", "--format", "npy", "--out", "{run}/npy"],
    ["derive", "{run}", "--whiten"],
    ["evaluate", "{run}", "--benchmarks", "ws353", "--oov", "standard,pieces", "--no-progress"],
    ["tune", "{run}", "--epochs", "1", "--no-progress"],
    ["analyze", "{run}", "--out", "{run}/plots"],
]

#: Values a damaged or crafted manifest may hold anywhere.
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=True)
    | st.sampled_from(
        ["", ".", "..", "../outside.txt", "/etc/passwd", "layer1.pc", "layer1.pc.bin", "a/b", "\0", "x" * 300]
    ),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=6,
)
#: Fields commands read, and some they do not.
FIELDS = ["files", "best", "layers", "pooling", "model", "model.source", "model.n_layers", "model.revision",
          "vocabulary", "vocabulary.lowercase", "corpus", "corpus.files", "corpus.words", "config", "derived",
          "distill_version", "analysis", "timings_seconds", "exports", "exported_from"]  # fmt: skip


@pytest.fixture(scope="module")
def fuzz_run(tiny_bert_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fuzz") / "run"
    distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), min_count=3, max_occurrences=5,
                best=True, teacher=True, pieces=True, analyze=True, progress=False)  # fmt: skip
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _check(fuzz_run: Path, command: list[str], damage) -> None:
    """Run ``command`` on a damaged copy of the run, with a folder of the user's beside it: exit 0 or 2, no
    traceback, the user's folder as it was."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(shutil.copytree(fuzz_run, Path(tmp) / "run"))
        beside = Path(tmp) / "beside"
        beside.mkdir()
        for name in ("outside.txt", "layer1.pc.bin", "report.md"):
            (beside / name).write_text("the user's")
        (Path(tmp) / "outside.txt").write_text("the user's")
        damage(run)
        before = _snapshot(beside), (Path(tmp) / "outside.txt").read_text()
        result = CliRunner().invoke(app, [c.format(run=run) for c in command], catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"{command}: {type(result.exception).__name__}: {result.exception}")
        assert result.exit_code in (0, 2), (command, result.output)
        assert (_snapshot(beside), (Path(tmp) / "outside.txt").read_text()) == before


def _set(data: dict, dotted: str, value: object) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[last] = value


@FUZZ
@given(command=st.sampled_from(COMMANDS), edits=st.lists(st.tuples(st.sampled_from(FIELDS), JSON), min_size=1,
                                                         max_size=3))  # fmt: skip
def test_random_manifests(fuzz_run, command, edits):
    def damage(run: Path) -> None:
        data = json.loads((run / "manifest.json").read_text())
        for field, value in edits:
            _set(data, field, value)
        (run / "manifest.json").write_text(json.dumps(data))

    _check(fuzz_run, command, damage)


@FUZZ
@given(command=st.sampled_from(COMMANDS), pick=st.integers(0, 10**6), share=st.floats(0, 0.99))
def test_truncated_files(fuzz_run, command, pick, share):
    files = sorted(p.name for p in fuzz_run.iterdir() if p.is_file())

    def damage(run: Path) -> None:
        path = run / files[pick % len(files)]
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * share)])

    _check(fuzz_run, command, damage)


OPTION_VALUES = st.sampled_from(["-1", "0", "1", "nan", "inf", "-inf", "1e309", "", "x", "3-1", "all", "99"])


@FUZZ
@given(
    command=st.sampled_from(
        [
            ["neighbors", "{run}", "king", "-k"],
            ["neighbors", "{run}", "king", "--layers"],
            ["export", "{run}", "--dims"],
            ["export", "{run}", "--top-words"],
            ["derive", "{run}", "--layers"],
            ["derive", "{run}", "--remove-top"],
            ["derive", "{run}", "--alone"],
            ["derive", "{run}", "--alone-weight"],
            ["derive", "{run}", "--alone-weight", "0.5", "--alone-template"],
            ["evaluate", "{run}", "--benchmarks", "ws353", "--seed"],
            ["evaluate", "{run}", "--benchmarks", "google", "--analogy-top-n"],
            ["tune", "{run}", "--learning-rate"],
            ["tune", "{run}", "--blend"],
            ["tune", "{run}", "--batch-size"],
        ]
    ),
    value=OPTION_VALUES,
)
def test_random_option_values(fuzz_run, command, value):
    _check(fuzz_run, [*command, value], lambda run: None)
