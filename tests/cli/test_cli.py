"""The command line as a user meets it: one clear line and exit 2 on bad input, nothing left on disk,
progress that suits a terminal or a log, choices typer lists and checks."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from distill.config import RunConfig
from distill.errors import ConfigError
from distill.progress import LogProgress

from ..conftest import TINY_CORPUS


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}  # typer's usage errors are boxed at the terminal's width
    return subprocess.run([sys.executable, "-m", "distill", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)  # fmt: skip


def _error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr  # one line, no traceback
    return lines[0]


def test_a_bad_layer_fails_before_the_output_folder_is_made(tiny_bert_dir, tmp_path):
    out = tmp_path / "never"
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--layers", "9", "--out", str(out))
    assert done.returncode == 2
    assert _error_line(done) == (
        "error: layer 9 is out of range: this model has hidden states 0..2 (0 = embedding output, 1 = first layer)"
    )
    assert not out.exists()


def test_a_negative_layer_names_the_rule_not_a_huge_range():
    with pytest.raises(ConfigError, match="layer -1 is out of range: layers count from 0"):
        RunConfig(layers="-1")


def test_float16_on_a_machine_without_gpu_is_refused_with_device_auto():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: float16 is allowed there")
    with pytest.raises(ConfigError, match="float16 is for GPUs"):
        RunConfig(dtype="float16")  # device auto


def test_choices_are_listed_and_checked_by_the_cli():
    done = _cli("run", "--sampling", "random")
    assert done.returncode == 2
    assert "'random' is not one of 'uniform', 'greedy'" in done.stderr
    help_text = _cli("run", "--help").stdout
    for panel in ("Input and vocabulary", "Sampling", "Model", "Output", "Scale"):
        assert panel in help_text
    assert "--shuffle-buffer" in help_text and "uniform|greedy" in help_text
    assert help_text.count('"distill[lexicon]"') == 2  # an extra's name, not markup for rich to drop


def test_every_option_of_run_is_a_field_of_run_config_with_its_default():
    import dataclasses
    import inspect

    from distill.cli.run import run

    params = inspect.signature(run).parameters
    for field in dataclasses.fields(RunConfig):
        assert field.name in params, field.name
        default = params[field.name].default
        if field.name == "pooling":
            assert default == "pc"
        elif field.name == "corpus":
            assert default is None
        else:  # as the option spells it: typed values (Layers) are parsed from it
            assert getattr(RunConfig(**{field.name: default}), field.name) == field.default, field.name


def test_a_missing_extra_names_the_extra_to_install(monkeypatch, tiny_bert_dir, tmp_path):
    import distill
    from distill.serve.export import export_run
    from distill.serve.formats import Format

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), min_count=3,
                      max_occurrences=5, progress=False)  # fmt: skip
    monkeypatch.setitem(sys.modules, "model2vec", None)  # as if not installed
    message = r'the model2vec format needs the package model2vec: pip install "distill\[export\]"'
    with pytest.raises(ConfigError, match=message):
        export_run(run.out, formats=[Format.KV, Format.MODEL2VEC], out=tmp_path / "export")
    assert not (tmp_path / "export").exists()  # checked before anything is written


def test_log_progress_writes_a_line_per_interval_not_bar_frames():
    stream = io.StringIO()
    bar = LogProgress(total=10, desc="encoding", unit="occ", every=0.0, file=stream)
    bar.update(4)
    bar.set_postfix(tok_s="1,000")
    bar.update(6)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("encoding: 4/10 (40%) occ")
    assert lines[1].startswith("encoding: 10/10 (100%) occ") and lines[1].endswith("tok_s=1,000")
    assert len(lines) == 2  # closing gives no second line for the count the last one gave
    assert "\r" not in stream.getvalue()


def test_log_progress_gives_the_time_left_at_the_average_rate(monkeypatch):
    from distill import progress

    clock = iter([0.0, 30.0, 30.0])  # start, then one line after 30 s with 100 of 400 done
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    bar = LogProgress(total=400, desc="reading", unit="words", every=10.0, file=stream)
    bar.update(100)
    assert stream.getvalue() == "reading: 100/400 (25%) words, 30 s, ETA 2 min\n"
    assert progress.duration(90) == "2 min" and progress.duration(7500) == "2 h 05 min"


def test_a_run_logged_to_a_file_has_no_progress_bar_frames(tiny_bert_dir, tmp_path):
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--min-count", "3",
                "--max-occurrences", "5", "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr  # stderr is a pipe here, as in CI or nohup


def test_the_lock_module_imports_without_fcntl(monkeypatch):
    """As on Windows; a separate copy of the module, so the one the package uses stays as it is."""
    import importlib.util

    import distill.lock as checkpoint

    monkeypatch.setitem(sys.modules, "fcntl", None)
    spec = importlib.util.spec_from_file_location("lock_without_fcntl", checkpoint.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    assert copy.fcntl is None and checkpoint.fcntl is not None


def test_version_prints_the_installed_packages_version():
    from importlib import metadata

    done = _cli("--version")
    assert done.returncode == 0 and done.stdout == f"distill {metadata.version('distill')}\n"
    assert metadata.version("distill").count(".") >= 1


def test_help_lists_run_first():
    done = _cli("--help")
    commands = done.stdout.split("Commands", 1)[1].splitlines()[1:]
    first = next(line.strip("│ ").split()[0] for line in commands if line.strip("│ "))
    assert done.returncode == 0 and first == "run"


@pytest.mark.integration
def test_evaluate_all_scores_what_is_on_this_machine_and_names_the_rest_once(tmp_path):
    from distill.paths import data_dir

    if not (data_dir() / "similarity" / "simlex999.tsv").is_file():
        pytest.skip("needs ../shared/data")
    data = tmp_path / "data"
    (data / "similarity").mkdir(parents=True)
    (data / "similarity" / "simlex999.tsv").write_bytes((data_dir() / "similarity" / "simlex999.tsv").read_bytes())
    vectors = tmp_path / "v.txt"
    vectors.write_text("3 2\nold 1 0\nnew 0.9 0.1\nhard 0 1\n")
    env = {**os.environ, "DISTILL_DATA": str(data)}
    done = subprocess.run([sys.executable, "-m", "distill", "evaluate", str(vectors), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    skipped = [line for line in done.stderr.splitlines() if "skipping" in line]
    assert len(skipped) == 1 and "men" in skipped[0] and "sts" in skipped[0] and "simlex999" not in skipped[0]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "SimLex" in report and "MEN" not in report.split("## Rows")[0]


def test_help_names_values_as_command_line_tools_do():
    done = _cli("neighbors", "--help")
    assert done.returncode == 0
    assert "Usage: distill neighbors [OPTIONS] VECTORS WORDS..." in done.stdout
    assert "[pc|mean]" in done.stdout and "INTEGER" in done.stdout
    for typer_spelling in ("<list[str]>", "<bool>", "<str>", "<int", "{vectors}"):
        assert typer_spelling not in done.stdout
    assert "<bool>" not in _cli("--help").stdout and "<list[str]>" not in _cli("run", "--help").stdout


def test_help_tidying_leaves_an_older_typer_as_it_spells_values(monkeypatch):
    """A typer without display_type_rich (older ones, as on a GPU image seen here) names values as click
    does: the tidying must leave it alone rather than fail before any command runs."""
    import typer

    from distill.cli.app import app, tidy_help

    command = typer.main.get_command(app)

    def metavars():
        return {(sub.name, p.name): p.metavar for sub in command.commands.values() for p in sub.params}

    before = metavars()
    for cls in typer.core.TyperOption.__mro__:
        if "display_type_rich" in vars(cls):
            monkeypatch.delattr(cls, "display_type_rich")
    tidy_help(command)
    assert metavars() == before


def test_model_refuses_a_dtype_it_cannot_export_before_distilling(tmp_path):
    done = _cli("model", "--dtype", "bfloat16", "--corpus", str(TINY_CORPUS), "--out", str(tmp_path / "m"))
    assert done.returncode == 2 and _error_line(done).startswith("error: --dtype bfloat16 is not available")
    assert not (tmp_path / "m").exists()


def test_neighbors_of_the_only_word_says_there_is_none(tmp_path):
    """A file of one word (or one word twice, the first kept) has no neighbour to list: said so, not ``king: ``."""
    path = tmp_path / "one.txt"
    path.write_text("2 2\nking 0.1 0.2\nking 0.3 0.4\n")
    done = _cli("neighbors", str(path), "king")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["king: no other word in the vectors"]
