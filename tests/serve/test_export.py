import errno

import numpy as np
import pytest
from gensim.models import KeyedVectors

from distill.errors import OutputError
from distill.files import atomic_path, check_writable
from distill.vectors.faiss_index import build_faiss_index, read_faiss, write_faiss
from distill.vectors.keyed import l2_normalize, to_keyed_vectors, write_word2vec


@pytest.fixture
def words_vectors(rng):
    words = [f"w{i}" for i in range(50)] + ["café", "naïve"]
    return words, rng.standard_normal((len(words), 16)).astype(np.float32)


@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_round_trip_through_gensim(tmp_path, words_vectors, binary):
    words, vectors = words_vectors
    path = write_word2vec(to_keyed_vectors(words, vectors), tmp_path / "v.bin", binary=binary)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert list(kv.index_to_key) == words
    np.testing.assert_array_equal(kv.vectors, vectors)  # text too: 9 significant digits read back exactly
    assert not list(tmp_path.glob(".*tmp*"))


def test_faiss_top1_is_the_word_itself(tmp_path, words_vectors):
    words, vectors = words_vectors
    path, _ = write_faiss(words, vectors, tmp_path / "v.faiss")
    index, read_words = read_faiss(path)
    assert read_words == words
    scores, ids = index.search(l2_normalize(vectors), 1)
    np.testing.assert_array_equal(ids[:, 0], np.arange(len(words)))
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)


def test_faiss_neighbours_match_numpy_cosine(rng):
    unit = l2_normalize(rng.standard_normal((200, 16)).astype(np.float32))
    _, ids = build_faiss_index(unit).search(unit[:5], 10)
    np.testing.assert_array_equal(ids, np.argsort(-(unit[:5] @ unit.T), axis=1)[:, :10])


def test_failed_write_leaves_nothing_behind(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash mid-write")
    assert list(tmp_path.iterdir()) == []


def test_full_disk_is_a_clear_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(OutputError, match="disk full while writing .*out.txt"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OutputError, match="cannot write to the output folder"):
        check_writable(blocker / "run")
