"""The tuning losses against the same figures computed by hand in numpy, and each one trained down."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distill.errors import ConfigError
from distill.tune.options import LOSSES, TuneOptions
from distill.tune.train import bag_batches, batch_loss, tune


def _problem(seed: int = 0, n_rows: int = 40, dim: int = 8, n_sentences: int = 300):
    """Sentences of 2-5 random rows; the teacher's embedding of each is the mean of a hidden table's rows."""
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(n_rows, dim)).astype(np.float32)
    ids = [rng.choice(n_rows, size=rng.integers(2, 6), replace=False) for _ in range(n_sentences)]
    targets = np.stack([hidden[i].mean(axis=0) for i in ids]) * 3.0  # another scale than the table's
    start = rng.normal(size=(n_rows, dim)).astype(np.float32)
    return start, ids, targets


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("loss", LOSSES)
def test_each_loss_is_its_formula(loss):
    start, ids, targets = _problem()
    bag = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(start), mode="mean")
    [batch] = bag_batches(ids, np.arange(12), 12)
    options = TuneOptions(loss=loss, temperature=0.1)
    got = batch_loss(bag, batch, torch.from_numpy(targets), options).item()
    s, t = np.stack([start[i].mean(axis=0) for i in ids[:12]]), targets[:12]
    if loss == "cosine":
        want = 1 - np.mean(np.sum(_unit(s) * _unit(t), axis=1))
    elif loss == "mse":
        want = np.mean((s - t) ** 2)
    elif loss == "contrastive":
        logits = _unit(s) @ _unit(t).T / 0.1
        logits -= logits.max(axis=1, keepdims=True)
        want = -np.mean(np.diag(logits) - np.log(np.exp(logits).sum(axis=1)))
    else:
        want = np.mean((_unit(s) @ _unit(s).T - _unit(t) @ _unit(t).T) ** 2)
    assert got == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("loss", LOSSES)
def test_each_loss_falls_on_held_out_sentences(loss):
    start, ids, targets = _problem(seed=1)
    result = tune(start, ids, targets, TuneOptions(loss=loss, epochs=40, batch_size=32, learning_rate=3e-2))
    assert result.best_epoch > 0
    assert result.history[result.best_epoch]["held_out"] < 0.5 * result.history[0]["held_out"]


def test_an_unknown_loss_is_a_clear_error():
    with pytest.raises(ConfigError, match="--loss must be one of cosine, mse"):
        TuneOptions(loss="hinge")
