import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import distill
from distill.analysis.measures import (
    IntraSentence,
    analyze_layers,
    anisotropy,
    random_baselines,
    self_similarity_and_mev,
)

from ..conftest import TINY_CORPUS


def test_identical_occurrences_have_self_similarity_and_mev_one():
    rows = np.repeat(np.array([[1.0, 2.0, 2.0], [0.0, -3.0, 4.0]], dtype=np.float32), 4, axis=0)  # 2 words x 4
    offsets, filled = np.array([0, 4, 8]), np.array([4, 4])
    self_sim, mev, centered = self_similarity_and_mev(rows, offsets, filled)
    np.testing.assert_allclose(self_sim, [1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(mev, [1.0, 1.0], atol=1e-6)
    np.testing.assert_array_equal(centered, [0.0, 0.0])  # no variance left once centered


def test_self_similarity_and_mev_by_hand():
    # word 0: two orthogonal rows of equal norm -> cosine 0, sigma1^2 / total = 1/2
    # word 1: rows at 60 degrees -> cosine 1/2; X^T X has eigenvalues 1.5 and 0.5 -> MEV 0.75
    # word 2: one filled row of three (the others are unfilled zero rows) -> no pair, MEV 1
    rows = np.array([[2, 0], [0, 2], [1, 0], [0.5, np.sqrt(3) / 2], [3, 4], [0, 0], [0, 0]], dtype=np.float32)
    offsets, filled = np.array([0, 2, 4, 7]), np.array([2, 2, 1])
    self_sim, mev, centered = self_similarity_and_mev(rows, offsets, filled)
    np.testing.assert_allclose(self_sim[:2], [0.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(centered[:2], [1.0, 1.0], atol=1e-5)  # two points: all variance on one line
    assert np.isnan(centered[2])
    assert np.isnan(self_sim[2])
    np.testing.assert_allclose(mev, [0.5, 0.75, 1.0], atol=1e-5)


def test_centered_mev_equals_pca_explained_variance(rng):
    from sklearn.decomposition import PCA

    x = (rng.standard_normal((40, 12)) * np.linspace(3, 0.5, 12) + 2.0).astype(np.float32)
    rows = np.vstack([x, np.zeros((5, 12), dtype=np.float32)])  # 5 unfilled rows of the word
    _, mev, centered = self_similarity_and_mev(rows, np.array([0, 45]), np.array([40]))
    assert centered[0] == pytest.approx(PCA(n_components=1).fit(x).explained_variance_ratio_[0], rel=1e-4)
    s = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    assert mev[0] == pytest.approx(s[0] ** 2 / (s**2).sum(), rel=1e-5)


def test_store_order_is_followed_through_position():
    logical = np.array([[1, 0], [0, 1], [1, 1], [1, 1]], dtype=np.float32)
    stored = logical[[2, 0, 3, 1]]  # appended in another order
    position = np.array([1, 3, 0, 2])
    a = self_similarity_and_mev(logical, np.array([0, 2, 4]), np.array([2, 2]))
    b = self_similarity_and_mev(stored, np.array([0, 2, 4]), np.array([2, 2]), position=position)
    np.testing.assert_allclose(a, b)


def test_isotropic_vectors_have_no_anisotropy(rng):
    vectors = rng.standard_normal((2000, 256))
    assert abs(anisotropy(vectors)) < 0.005
    assert anisotropy(np.ones((10, 4)) + rng.random((10, 4)) * 1e-3) > 0.99  # all one direction
    baseline, mev, centered = random_baselines(vectors, np.arange(2000), rng, np.array([5, 100, 100]), n_sample=500)
    assert abs(baseline) < 0.02 and set(mev) == set(centered) and {5, 100} <= set(mev) and len(mev) <= 26
    assert 0 < mev[100] < 0.1 and 0 < centered[100] < 0.1  # 100 random rows: no dominant direction
    assert centered[5] > 0.25  # 5 rows: rank 4 once centered, so the first component holds at least 1/4


def test_intra_sentence_similarity_by_hand():
    intra = IntraSentence(layers=(0, 1))
    # window 0: text tokens (1,0) and (0,1) after a special token -> mean (1,1)/sqrt2 -> cos 0.707 each
    # window 1: two identical text tokens -> 1; window 2: one text token only -> not counted
    h0 = torch.tensor([[[9.0, 9.0], [1, 0], [0, 1]], [[3, 4], [3, 4], [0, 0]], [[1, 2], [0, 0], [0, 0]]])
    content = torch.tensor([[False, True, True], [True, True, False], [True, False, False]])
    intra.observe((h0, 2 * h0), torch.zeros(3, 3, dtype=torch.long), content)
    assert intra.count == 2
    expected = (np.sqrt(0.5) + 1.0) / 2
    assert intra.means() == pytest.approx({0: expected, 1: expected})


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def test_analysis_measures_every_layer_of_a_run(tiny_bert_dir, tmp_path):
    result = distill.run(
        model=str(tiny_bert_dir),
        out=str(tmp_path / "a"),
        corpus=[str(TINY_CORPUS)],
        layers="0-2",
        min_count=2,
        max_occurrences=8,
        analyze=True,
        progress=False,
    )
    analysis = json.loads((tmp_path / "a" / "analysis.json").read_text(), parse_constant=_not_json)
    assert list(analysis["layers"]) == ["0", "1", "2"]
    assert analysis["group_sizes"]["rank 1000+"] == 0  # a group of no word has no mean: null, and a dash
    assert all(r["self_similarity_by_group"]["rank 1000+"] is None for r in analysis["layers"].values())
    assert all(row.endswith("| – |") for row in (tmp_path / "a" / "analysis.md").read_text().splitlines()[-3:])
    vocab = [line.split("\t") for line in (tmp_path / "a" / "vocab.tsv").read_text().splitlines()]
    assert analysis["words_measured"] == sum(min(int(c), 8) >= 5 for _, c in vocab)
    assert analysis["sentences_measured"] == result.manifest["encoding"]["windows"]
    for record in analysis["layers"].values():
        assert -1 <= record["anisotropy"] <= 1 and 0 < record["mev"] <= 1
        assert record["self_similarity_adjusted"] == pytest.approx(record["self_similarity"] - record["anisotropy"])
        assert 0 < record["intra_sentence"] <= 1
    for name in ("analysis.md", "self_similarity.png", "intra_sentence.png", "mev.png", "anisotropy.png"):
        assert (tmp_path / "a" / name).is_file()
    assert result.manifest["analysis"]["words_measured"] == analysis["words_measured"]
    # several runs overlaid, no model run
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "distill",
            "analyze",
            str(tmp_path / "a"),
            str(tmp_path / "a"),
            "--out",
            str(tmp_path / "both"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "both" / "mev.png").is_file()
    before = (tmp_path / "a" / "mev.png").read_bytes()
    (tmp_path / "file").write_text("the user's")
    for out, said in (("a", "is a distill run folder (manifest.json)"), ("file", "cannot write to the output folder")):
        done = subprocess.run([sys.executable, "-m", "distill", "analyze", str(tmp_path / "a"), str(tmp_path / "a"),
                               "--out", str(tmp_path / out)], capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 2 and said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert (tmp_path / "a" / "mev.png").read_bytes() == before and (tmp_path / "file").read_text() == "the user's"
    missing = subprocess.run(
        [sys.executable, "-m", "distill", "analyze", str(tmp_path)], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "has no analysis.json" in missing.stderr
    for given in (tmp_path / "file", tmp_path / "gone"):
        wrong = subprocess.run([sys.executable, "-m", "distill", "analyze", str(given)], capture_output=True, text=True)
        said = f"error: {given} is not a folder; give the --out of a distill analyze run\n"
        assert wrong.returncode == 2 and wrong.stderr == said


def test_the_command_a_missing_analysis_suggests_can_be_pasted(tmp_path):
    from distill.analysis.report import read_analysis
    from distill.errors import ConfigError

    folder = tmp_path / "my run"
    folder.mkdir()
    with pytest.raises(ConfigError, match=f"--out '{folder}' first"):
        read_analysis(folder)


def test_analysis_needs_words_with_five_occurrences():
    from distill.errors import ConfigError

    with pytest.raises(ConfigError, match="no word has 5 or more occurrences"):
        analyze_layers({0: np.ones((3, 2), dtype=np.float32)}, np.array([0, 3]), np.array([3]), ["a"])


def test_top_singular_value_survives_a_word_whose_occurrences_are_all_identical():
    from distill.analysis.measures import top_squared_singular_value

    x = torch.randn(3, 40, 32, generator=torch.Generator().manual_seed(0))
    x[1] = x[1, :1]  # one sentence repeated: centered, only rounding noise is left
    centered = x - x.mean(dim=1, keepdim=True)
    top = top_squared_singular_value(centered)
    expected = torch.linalg.svdvals(centered.double())[:, 0] ** 2
    torch.testing.assert_close(top.double(), expected, rtol=1e-4, atol=1e-9)
