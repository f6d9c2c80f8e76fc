import numpy as np
import pytest

from distill.config import ConfigError
from distill.evaluation import evaluate_similarity, load_similarity
from distill.evaluation.datasets import SimilarityDataset
from distill.export import to_keyed_vectors


def test_spearman_against_a_hand_computed_value():
    # cosines of the three covered pairs: a-b 1.0, a-c 0.0, b-c 0.0 ... made distinct below
    words = ["a", "b", "c", "d"]
    vectors = np.array([[1, 0], [1, 0.2], [0, 1], [1, 1]], dtype=np.float32)
    kv = to_keyed_vectors(words, vectors)
    data = SimilarityDataset("toy", (("a", "b"), ("a", "c"), ("a", "d"), ("A", "zz")), (3.0, 1.0, 2.0, 5.0))
    result = evaluate_similarity(kv, data)
    # cosines: a-b 0.981, a-c 0.0, a-d 0.707 -> ranks 3,1,2; gold 3,1,2 -> rho = 1
    assert result.spearman == pytest.approx(1.0)
    assert (result.n_total, result.n_covered) == (4, 3)
    swapped = SimilarityDataset("toy", data.pairs[:3], (1.0, 3.0, 2.0))
    # ranks 3,1,2 vs 1,3,2: d = (2, -2, 0), rho = 1 - 6*8 / (3*(9-1)) = -1
    assert evaluate_similarity(kv, swapped).spearman == pytest.approx(-1.0)


def test_no_covered_pair_is_an_error():
    kv = to_keyed_vectors(["a"], np.ones((1, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="none of 1 pairs is in the vocabulary"):
        evaluate_similarity(kv, SimilarityDataset("toy", (("x", "y"),), (1.0,)))


def test_similarity_files_load(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("word1\tword2\tscore\nold\tnew\t1.58\n\nsmart\tintelligent\t9.2\n")
    data = load_similarity(path)
    assert data.pairs == (("old", "new"), ("smart", "intelligent")) and data.scores == (1.58, 9.2)
    path.write_text("word1\tword2\tscore\nold\tnew\n")
    with pytest.raises(ConfigError, match="line 2: expected word1<TAB>word2<TAB>score"):
        load_similarity(path)
