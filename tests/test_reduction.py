import numpy as np
import pytest
import torch
from sklearn.decomposition import TruncatedSVD

from distill.config import Pooling
from distill.reduction import batched_first_pc, explained_variance_ratio, first_principal_component, reduce_words


def test_pc_of_scaled_copies_is_their_unit_direction():
    occurrences = np.outer([1.0, 2.0, 5.0], [3.0, 4.0]).astype(np.float32)  # (3, 2)
    pc = first_principal_component(occurrences)
    np.testing.assert_allclose(pc, [0.6, 0.8], atol=1e-6)


def test_pc_sign_points_toward_the_mean():
    occurrences = -np.outer([1.0, 2.0, 5.0], [3.0, 4.0]).astype(np.float32)
    v, sigma = batched_first_pc(torch.from_numpy(occurrences)[None])
    np.testing.assert_allclose(v[0].numpy(), [-0.6, -0.8], atol=1e-6)
    assert float(v[0] @ torch.from_numpy(occurrences).mean(0)) > 0
    np.testing.assert_allclose(float(sigma[0]), np.linalg.norm(occurrences), rtol=1e-5)


def test_batched_pc_matches_numpy_svd_and_sklearn(rng):
    words = [
        rng.standard_normal((n, 24)).astype(np.float32) + rng.standard_normal(24).astype(np.float32)
        for n in (1, 2, 7, 30, 30)
    ]
    width = max(len(w) for w in words)
    block = np.zeros((len(words), width, 24), dtype=np.float32)
    for i, w in enumerate(words):
        block[i, : len(w)] = w  # zero padding must not change anything
    v, _ = batched_first_pc(torch.from_numpy(block))
    for i, w in enumerate(words):
        expected = first_principal_component(w)
        np.testing.assert_allclose(v[i].numpy(), expected, atol=1e-4)
        if len(w) > 1:
            svd = TruncatedSVD(n_components=1, algorithm="arpack").fit(w.astype(np.float64))
            assert abs(float(svd.components_[0] @ v[i].numpy())) > 1 - 1e-6


def test_batched_pc_without_a_gap_falls_back_to_exact(rng):
    # Two orthogonal directions of close energy: 3 power steps are not enough, the exact path answers.
    q, _ = np.linalg.qr(rng.standard_normal((16, 16)))
    x = np.stack([q[0] * 1.0, q[1] * 0.99]).astype(np.float32)
    v, _ = batched_first_pc(torch.from_numpy(x)[None], max_iter=3)
    np.testing.assert_allclose(v[0].numpy(), first_principal_component(x), atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 16), (30, 4)])  # Gram of the rows, then of the columns
def test_exact_fallback_matches_numpy(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    v, _ = batched_first_pc(torch.from_numpy(x)[None], max_iter=1)
    np.testing.assert_allclose(v[0].numpy(), first_principal_component(x), atol=1e-5)


def test_reduce_words_uses_each_words_rows(rng):
    sizes = [5, 1, 3, 200, 2]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    matrix = rng.standard_normal((offsets[-1], 8)).astype(np.float32) + 1.0
    filled = np.array(sizes)
    pcs = reduce_words(matrix, offsets, filled, Pooling.PC, max_elements=800)  # forces several groups
    means = reduce_words(matrix, offsets, filled, Pooling.MEAN)
    for w in range(len(sizes)):
        rows = matrix[offsets[w] : offsets[w + 1]]
        np.testing.assert_allclose(pcs[w], first_principal_component(rows), atol=1e-4)
        np.testing.assert_allclose(means[w], rows.mean(axis=0), atol=1e-5)


def test_reduce_words_reads_rows_through_the_store_position(rng):
    from distill.encoding.store import OccurrenceStore

    sizes = np.array([3, 1, 2])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    logical = rng.standard_normal((6, 4)).astype(np.float32)
    store = OccurrenceStore(None, (1,), 6, 4)
    for rows in ([5, 0], [3], [1, 2]):  # encoded out of order, row 4 never
        store.write(np.array(rows), logical[rows][None])
    expected = logical.copy()
    expected[4] = 0.0
    filled = store.filled_per_word(offsets)
    assert list(filled) == [3, 1, 1]
    means = reduce_words(store.matrices[1], offsets, filled, Pooling.MEAN, position=store.position)
    np.testing.assert_allclose(means[0], expected[0:3].mean(0), atol=1e-6)
    np.testing.assert_allclose(means[2], expected[5], atol=1e-6)  # the unfilled row adds zero, counts nothing
    pcs = reduce_words(store.matrices[1], offsets, filled, Pooling.PC, position=store.position)
    np.testing.assert_allclose(pcs[0], first_principal_component(expected[0:3]), atol=1e-5)


def test_reduce_words_mean_ignores_unfilled_rows_and_zeroes_empty_words():
    matrix = np.array([[2.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]], dtype=np.float32)
    offsets = np.array([0, 2, 3, 4])
    filled = np.array([1, 0, 1])  # word 0: second row never encoded; word 1: nothing encoded
    means = reduce_words(matrix, offsets, filled, Pooling.MEAN)
    np.testing.assert_allclose(means, [[2.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    unit = reduce_words(matrix, offsets, filled, Pooling.MEAN, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit[[0, 2]], axis=1), 1.0, atol=1e-6)


def test_explained_variance_of_rank_one_is_one():
    assert explained_variance_ratio(np.outer([1, 2, 3], [1, 1])) == pytest.approx(1.0)
    assert explained_variance_ratio(np.eye(4)) == pytest.approx(0.25)
