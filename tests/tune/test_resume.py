"""A tuning stopped part way goes on from its checkpoint to the bytes an unstopped tuning gives; a checkpoint of
other inputs, or a damaged one, is never reused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import distill.tune.train as train
from distill.tune.options import TuneOptions
from distill.tune.resume import inputs_digest
from distill.tune.train import tune

OPTIONS = TuneOptions(epochs=8, batch_size=32, learning_rate=0.05, patience=2)


def _problem(seed: int = 0, n_rows: int = 40, dim: int = 6, n_sentences: int = 300):
    """Sentences of random rows; the teacher is a rotation of a hidden table."""
    rng = np.random.default_rng(seed)
    start = rng.normal(size=(n_rows, dim)).astype(np.float32)
    hidden = start + 0.5 * rng.normal(size=start.shape).astype(np.float32)
    rotation = np.linalg.qr(rng.normal(size=(dim, dim)))[0].astype(np.float32)
    ids = [rng.choice(n_rows, size=rng.integers(2, 7), replace=False) for _ in range(n_sentences)]
    targets = np.stack([(hidden[i] @ rotation.T).mean(axis=0) for i in ids])
    return start, ids, targets


class Stop(Exception):
    """Stands for a kill between two epochs."""


def _stopped_after(monkeypatch, epochs: int) -> None:
    """The tuning is stopped once ``epochs`` epochs have been saved (every epoch is)."""
    saved = []
    write = train.write_checkpoint

    def write_then_stop(path, state):
        write(path, state)
        saved.append(state["epoch"])
        if len(saved) == epochs:
            raise Stop

    monkeypatch.setattr(train, "write_checkpoint", write_then_stop)


def _same(a: train.TuneResult, b: train.TuneResult) -> None:
    assert a.vectors.tobytes() == b.vectors.tobytes()
    assert a.map is not None and b.map is not None and a.map.tobytes() == b.map.tobytes()
    assert a.best_epoch == b.best_epoch
    assert np.allclose([h["held_out"] for h in a.history], [h["held_out"] for h in b.history], rtol=0, atol=0)


@pytest.mark.parametrize("options", [OPTIONS, dataclasses.replace(OPTIONS, loss="mse", shared_map=True)])
def test_a_stopped_tuning_goes_on_to_the_same_bytes(tmp_path, monkeypatch, options):
    start, ids, targets = _problem()
    whole = tune(start, ids, targets, options)
    assert whole.best_epoch >= 3 and len(whole.history) > 4  # it trains for several epochs: there is a middle
    monkeypatch.setattr(train, "SAVE_SECONDS", 0.0)
    checkpoint = tmp_path / "tuning.pt"
    with monkeypatch.context() as patch:
        _stopped_after(patch, 2)
        with pytest.raises(Stop):
            tune(start, ids, targets, options, checkpoint=checkpoint)
    assert torch.load(checkpoint, weights_only=True)["epoch"] == 2
    resumed = tune(start, ids, targets, options, checkpoint=checkpoint)
    _same(resumed, whole)
    assert torch.load(checkpoint, weights_only=True)["done"]
    # a finished tuning's checkpoint gives its result again without training
    monkeypatch.setattr(train, "batch_loss", lambda *a: pytest.fail("trained again"))
    _same(tune(start, ids, targets, options, checkpoint=checkpoint), whole)


def test_a_checkpoint_of_other_inputs_or_damaged_starts_afresh(tmp_path, monkeypatch, caplog):
    start, ids, targets = _problem()
    monkeypatch.setattr(train, "SAVE_SECONDS", 0.0)
    checkpoint = tmp_path / "tuning.pt"
    other = tune(start, ids, targets, dataclasses.replace(OPTIONS, seed=1), checkpoint=checkpoint)
    fresh = tune(start, ids, targets, OPTIONS)
    assert other.vectors.tobytes() != fresh.vectors.tobytes()
    _same(tune(start, ids, targets, OPTIONS, checkpoint=checkpoint), fresh)  # the seed's checkpoint not reused
    assert "from other inputs" in caplog.text
    checkpoint.write_bytes(checkpoint.read_bytes()[:1000])
    _same(tune(start, ids, targets, OPTIONS, checkpoint=checkpoint), fresh)
    assert "cannot be read" in caplog.text


def test_the_digest_names_every_input_but_the_blend():
    start, ids, targets = _problem()
    cpu = torch.device("cpu")
    base = inputs_digest(start, ids, targets, OPTIONS, 0, cpu)
    assert inputs_digest(start.copy(), list(ids), targets.copy(), OPTIONS, 0, cpu) == base
    assert inputs_digest(start, ids, targets, dataclasses.replace(OPTIONS, blend=0.9), 0, cpu) == base
    moved = start.copy()
    moved[3, 2] += 1e-3
    shifted = [ids[0][:-1], *ids[1:]]  # the same rows in all, one sentence ending sooner
    changes = [
        inputs_digest(moved, ids, targets, OPTIONS, 0, cpu),
        inputs_digest(start, shifted, targets, OPTIONS, 0, cpu),
        inputs_digest(start, ids, targets[::-1].copy(), OPTIONS, 0, cpu),
        inputs_digest(start, ids, targets, dataclasses.replace(OPTIONS, learning_rate=0.01), 0, cpu),
        inputs_digest(start, ids, targets, OPTIONS, 10, cpu),
        inputs_digest(start, ids, targets, OPTIONS, 0, torch.device("cuda")),
    ]
    assert len({base, *changes}) == len(changes) + 1
