import numpy as np
import pytest

from distill.config import ConfigError
from distill.postprocess import combine, remove_top, unit, whiten


def test_remove_top_removes_the_dominant_directions(rng):
    basis = np.linalg.qr(rng.standard_normal((10, 10)))[0]
    x = (rng.standard_normal((500, 10)) * [20, 10, 1, 1, 1, 1, 1, 1, 1, 1]) @ basis.T + 5.0
    out = remove_top(x, 2)
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-4)  # centred
    _, _, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    np.testing.assert_allclose(out @ vt[:2].T, 0, atol=1e-3)  # nothing left along the top two directions
    np.testing.assert_allclose(out @ vt[2:].T, (x - x.mean(axis=0)) @ vt[2:].T, atol=1e-3)  # the rest untouched
    assert np.var(out @ basis[:, 0]) < 1e-3 * np.var(x @ basis[:, 0])  # the true top direction is gone
    with pytest.raises(ConfigError, match="--remove-top must be between 0 and 9"):
        remove_top(x, 10)


def test_whitening_gives_unit_covariance(rng):
    x = rng.standard_normal((400, 6)) @ rng.standard_normal((6, 6)) + 3.0
    cov = np.cov(whiten(x), rowvar=False)
    np.testing.assert_allclose(cov, np.eye(6), atol=1e-4)


def test_combine_means_unit_rows_or_concatenates(rng):
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)) * 100
    np.testing.assert_allclose(combine([a, b]), (unit(a) + unit(b)) / 2, atol=1e-6)
    assert combine([a, b], "concat").shape == (5, 8)
    with pytest.raises(ConfigError, match="use --combine concat"):
        combine([a, rng.standard_normal((5, 3))])
