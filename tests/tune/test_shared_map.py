"""The shared map: trained with the rows, applied to every row of the tuned table."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distill.tune.options import TuneOptions
from distill.tune.train import Student, tune


def _problem(seed: int = 0, n_rows: int = 30, dim: int = 6, n_sentences: int = 400):
    """Sentences of rows 0-24 only (rows 25-29 in none); the teacher is a rotation of a hidden table."""
    rng = np.random.default_rng(seed)
    start = rng.normal(size=(n_rows, dim)).astype(np.float32)
    rotation = np.linalg.qr(rng.normal(size=(dim, dim)))[0].astype(np.float32)
    ids = [rng.choice(25, size=rng.integers(2, 6), replace=False) for _ in range(n_sentences)]
    targets = np.stack([(start[i] @ rotation.T).mean(axis=0) for i in ids])
    return start, ids, targets, rotation


def test_the_table_gives_the_mean_the_student_trained_on():
    rng = np.random.default_rng(3)
    student = Student(rng.normal(size=(10, 4)).astype(np.float32), shared_map=True)
    with torch.no_grad():
        student.map.weight.copy_(torch.from_numpy(rng.normal(size=(4, 4)).astype(np.float32)))  # type: ignore[union-attr]
    rows = np.array([1, 4, 7])
    got = student(torch.from_numpy(rows), torch.tensor([0])).detach().numpy()[0]
    assert np.allclose(student.table()[rows].mean(axis=0), got, atol=1e-5)


def test_a_step_moves_only_the_rows_its_batch_holds():
    """Lazy Adam: a row held by an earlier batch does not drift on its momentum in a later step (dense Adam
    moves it), so a step's cost does not grow with the table."""
    rng = np.random.default_rng(5)
    student = Student(rng.normal(size=(50, 4)).astype(np.float32), shared_map=True)
    optimizers = student.optimizers(0.1)
    goal = torch.from_numpy(rng.normal(size=(1, 4)).astype(np.float32))

    def step(rows: list[int]) -> np.ndarray:
        for optimizer in optimizers:
            optimizer.zero_grad()
        mean = student(torch.tensor(rows), torch.tensor([0]))
        (1 - torch.nn.functional.cosine_similarity(mean, goal).mean()).backward()
        assert student.bag.weight.grad is not None and student.bag.weight.grad.is_sparse
        for optimizer in optimizers:
            optimizer.step()
        return student.bag.weight.detach().numpy().copy()

    start = student.bag.weight.detach().numpy().copy()
    first = step([1, 4])
    second = step([2])
    assert not np.allclose(first[[1, 4]], start[[1, 4]]) and not np.allclose(second[2], first[2])
    assert np.array_equal(second[[1, 4]], first[[1, 4]])  # untouched by the second step
    others = np.setdiff1d(np.arange(50), [1, 2, 4])
    assert np.array_equal(second[others], start[others])


@pytest.mark.parametrize("shared_map", [True, False])
def test_rows_no_sentence_holds_move_only_with_the_shared_map(shared_map):
    start, ids, targets, rotation = _problem()
    options = TuneOptions(epochs=60, batch_size=32, learning_rate=2e-2, shared_map=shared_map)
    result = tune(start, ids, targets, options)
    assert result.history[result.best_epoch]["held_out"] < 0.2 * result.history[0]["held_out"]
    unseen, tuned = start[25:], result.vectors[25:]
    if not shared_map:
        assert np.array_equal(tuned, unseen)
        return
    # the map took up (much of) the teacher's rotation: the unseen rows turn toward where the teacher puts them
    cosine = np.sum(tuned * (unseen @ rotation.T), axis=1) / np.linalg.norm(tuned, axis=1)
    cosine /= np.linalg.norm(unseen, axis=1)
    before = np.sum(unseen * (unseen @ rotation.T), axis=1) / np.linalg.norm(unseen, axis=1) ** 2
    assert cosine.mean() > 0.5 and cosine.mean() > before.mean() + 0.3, (cosine, before)


@pytest.mark.parametrize("blend", [0.25, 1.0])
def test_the_untrained_map_is_where_the_blended_table_puts_the_rows_no_sentence_holds(blend):
    start, ids, targets, _ = _problem()
    result = tune(start, ids, targets, TuneOptions(epochs=20, batch_size=32, learning_rate=2e-2))
    assert result.map is not None and not np.allclose(result.map, np.eye(start.shape[1]), atol=1e-2)
    blended = start + np.float32(blend) * (result.vectors - start)  # what TunedTable.blended gives
    np.testing.assert_allclose(blended[25:], start[25:] @ result.untrained_map(blend), rtol=1e-4, atol=1e-5)
    assert not np.allclose(blended[:25], start[:25] @ result.untrained_map(blend), atol=1e-3)  # the trained rows
