"""``distill run --tune-blend``: the recommended set tuned in the same command, as ``distill tune`` tunes it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import distill
from distill.config import RunConfig
from distill.errors import ConfigError
from distill.names import WORK_DIR
from distill.pipeline import summary
from distill.tune.options import TuneOptions
from distill.tune.train import tune_run
from distill.workdir import RunInterrupted, fingerprint

from ..conftest import TINY_CORPUS

OPTIONS = dict(corpus=[str(TINY_CORPUS)], layers="1", best=True, teacher=True, min_count=3, max_occurrences=20,
               seed=3, progress=False)  # fmt: skip


def test_the_run_recommends_the_set_distill_tune_would_make(tiny_bert_dir, tmp_path):
    one = distill.run(model=str(tiny_bert_dir), out=str(tmp_path / "one"), tune_blend=0.25, **OPTIONS)
    two = distill.run(model=str(tiny_bert_dir), out=str(tmp_path / "two"), **OPTIONS)
    name, _, _ = tune_run(two.out, "best", options=TuneOptions(blend=0.25, seed=3), recommend=True)
    manifest = json.loads((one.out / "manifest.json").read_text())
    assert manifest["best"] == name == f"{two.manifest['best']}.tuned" and one.manifest == manifest
    assert manifest["config"]["tune_blend"] == 0.25 and manifest["derived"][name]["options"]["blend"] == 0.25
    np.testing.assert_allclose(one["best"].vectors, distill.load(two.out, vector_set="best").vectors, atol=1e-6)
    assert one["best"].index_to_key == distill.load(two.out, vector_set="best").index_to_key
    assert not (one.out / WORK_DIR).exists()
    assert f"recommended set (--best, tuned toward the teacher at blend 0.25): {one.out}/{name}.txt" in summary(one)


def test_a_run_stopped_while_it_tunes_goes_on_from_the_finished_encoding(tiny_bert_dir, tmp_path, monkeypatch, caplog):
    import distill.tune.train

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "run"
    monkeypatch.setattr(distill.tune.train, "tune_run", stopped)
    with pytest.raises(RunInterrupted, match="run the same command again"):  # Ctrl-C while it tunes
        distill.run(model=str(tiny_bert_dir), out=str(out), tune_blend=0.5, checkpoint_every=0, **OPTIONS)
    assert (out / WORK_DIR).is_dir()
    monkeypatch.undo()
    with caplog.at_level("INFO", logger="distill"):
        result = distill.run(model=str(tiny_bert_dir), out=str(out), tune_blend=0.5, checkpoint_every=0, **OPTIONS)
    assert "the encoding pass was complete" in caplog.text  # not encoded again
    assert result.manifest["best"].endswith(".tuned") and not (out / WORK_DIR).exists()


def test_a_run_stopped_in_its_tuning_goes_on_from_its_last_epoch_to_the_same_set(
    tiny_bert_dir, tmp_path, monkeypatch, caplog
):
    import distill.tune.train

    whole = distill.run(model=str(tiny_bert_dir), out=str(tmp_path / "whole"), tune_blend=0.5, **OPTIONS)
    out, write = tmp_path / "run", distill.tune.train.write_checkpoint
    monkeypatch.setattr(distill.tune.train, "SAVE_SECONDS", 0.0)  # saved after every epoch

    def saved_then_stopped(path, state):
        write(path, state)
        if state["epoch"] == 2:
            raise KeyboardInterrupt  # Ctrl-C once the second epoch is saved

    with monkeypatch.context() as patch:
        patch.setattr(distill.tune.train, "write_checkpoint", saved_then_stopped)
        with pytest.raises(RunInterrupted, match="run the same command again"):
            distill.run(model=str(tiny_bert_dir), out=str(out), tune_blend=0.5, **OPTIONS)
    assert (out / WORK_DIR / "tuning.pt").is_file()
    with caplog.at_level("INFO", logger="distill"):
        result = distill.run(model=str(tiny_bert_dir), out=str(out), tune_blend=0.5, **OPTIONS)
    assert "resuming the tuning after epoch 2" in caplog.text
    name = whole.manifest["best"]
    assert result.manifest["best"] == name and result.manifest["derived"][name]["best_epoch"] > 2
    assert result.manifest["derived"][name] == whole.manifest["derived"][name]  # the history too
    assert (out / f"{name}.bin").read_bytes() == (whole.out / f"{name}.bin").read_bytes()
    assert not (out / WORK_DIR).exists()


def test_the_blend_does_not_touch_the_checkpoint_and_needs_the_teacher(tiny_bert_dir):
    config = RunConfig(model=str(tiny_bert_dir), corpus=(str(TINY_CORPUS),), best=True, teacher=True)
    tuned = dataclasses.replace(config, tune_blend=0.25)
    assert fingerprint(tuned, config.corpus, "1") == fingerprint(config, config.corpus, "1")
    for bad, why in (({"teacher": False}, "add --best and --teacher"), ({"tune_blend": 0.0}, "above 0")):
        with pytest.raises(ConfigError, match=why):
            dataclasses.replace(tuned, **bad)
