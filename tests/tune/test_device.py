"""Where a table trains: a CUDA GPU when there is one (``--device``), else the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distill.errors import ConfigError
from distill.tune.options import TuneOptions
from distill.tune.train import batch_loss, tune, tuning_device


def test_auto_trains_on_a_cuda_gpu_when_there_is_one_else_on_the_cpu():
    assert tuning_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert tuning_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "tpu"])
def test_an_unknown_device_is_a_clear_error(device):
    with pytest.raises(ConfigError, match="unknown device"):
        tuning_device(device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_a_gpu_this_machine_lacks_is_a_clear_error():
    with pytest.raises(ConfigError, match="no CUDA GPU"):
        tuning_device("cuda")


def test_the_train_loss_is_the_mean_of_the_steps_losses(monkeypatch):
    import distill.tune.train as train

    seen: list[float] = []

    def recorded(*args, **kwargs):
        loss = batch_loss(*args, **kwargs)
        seen.append(loss.item())
        return loss

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    ids = [rng.integers(0, 50, size=rng.integers(2, 6)) for _ in range(100)]
    targets = rng.normal(size=(100, 8)).astype(np.float32)
    monkeypatch.setattr(train, "held_out_loss", lambda *args: 1.0)  # only the training steps call batch_loss
    monkeypatch.setattr(train, "batch_loss", recorded)
    result = tune(vectors, ids, targets, TuneOptions(epochs=1, batch_size=16, seed=0), device="cpu")
    assert len(seen) == 6  # 90 training sentences in batches of 16
    assert result.history[1]["train"] == pytest.approx(np.mean(seen), rel=1e-6)
