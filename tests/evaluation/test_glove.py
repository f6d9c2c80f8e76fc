import numpy as np
import pytest

from distill.evaluation.glove import GloveOptions, cooccurrence, train_glove


def test_cooccurrence_counts_by_hand():
    # sentence 1: 0 1 2 ; sentence 2: 2 0. window 2: (0,1) 1, (1,2) 1, (0,2) 1/2 ; (2,0) 1 from sentence 2
    x = cooccurrence([np.array([0, 1, 2]), np.array([2, 0])], n_words=3, window=2).toarray()
    expected = np.array([[0, 1, 1.5], [1, 0, 1], [1.5, 1, 0]])
    np.testing.assert_allclose(x, expected)
    # pairs never cross sentences: with window 1 the (2, 2) pair across the boundary is not counted
    y = cooccurrence([np.array([0, 2]), np.array([2, 1])], n_words=3, window=1).toarray()
    assert y[2, 2] == 0 and y[0, 2] == 1 and y[1, 2] == 1


def test_glove_fits_log_counts_of_a_low_rank_matrix():
    rng = np.random.default_rng(0)
    n = 30
    u = rng.standard_normal((n, 3)) * 0.5
    counts = np.exp(u @ u.T + 2.0)  # log counts are rank 3 plus a constant: GloVe can fit them exactly
    np.fill_diagonal(counts, 0)
    import scipy.sparse as sp

    cooc = sp.coo_matrix(counts)
    options = GloveOptions(dim=8, epochs=0, batch_size=64, learning_rate=0.05)
    start = train_glove(cooc, options).loss(cooc)
    fit = train_glove(cooc, GloveOptions(dim=8, epochs=300, batch_size=64, learning_rate=0.05))
    assert fit.loss(cooc) < 0.02 * start
    pred = (fit.w[cooc.row] * fit.c[cooc.col]).sum(1) + fit.bw[cooc.row] + fit.bc[cooc.col]
    assert np.corrcoef(pred, np.log(cooc.data))[0, 1] > 0.99
    np.testing.assert_array_equal(fit.vectors, fit.w + fit.c)
    again = train_glove(cooc, GloveOptions(dim=8, epochs=300, batch_size=64, learning_rate=0.05))
    np.testing.assert_array_equal(again.vectors, fit.vectors)  # seeded: same result


def test_empty_input_is_an_error():
    with pytest.raises(ValueError, match="no sentences"):
        cooccurrence([], 3)
