import gzip

import numpy as np
import pytest

from distill.errors import ConfigError
from distill.evaluation.vectors import expand_paths, load_vectors
from distill.vectors.keyed import to_keyed_vectors, write_word2vec
from distill.vectors.reader import read_vectors

WORDS = ["the", "king", "queen"]
VECTORS = np.array([[0.5, -1.0, 2.0], [1.25, 0.0, -0.5], [3.0, 1e-3, 7.0]], dtype=np.float32)


def _lines(header: bool, sep: str = " ") -> str:
    rows = [sep.join([w, *(repr(float(x)) for x in v)]) for w, v in zip(WORDS, VECTORS)]
    return "\n".join(([f"{len(WORDS)} {VECTORS.shape[1]}"] if header else []) + rows) + "\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("w2v.txt", _lines(header=True)),
        ("glove.txt", _lines(header=False)),  # GloVe: no header line
        ("tabs.vec", _lines(header=True, sep="\t")),
        ("crlf.txt", _lines(header=False).replace("\n", "\r\n")),
        ("bom.txt", "\ufeff" + _lines(header=True)),  # a byte-order mark, as Windows editors write: not a word
        ("bom-glove.txt", "\ufeff" + _lines(header=False)),
    ],
)
def test_text_formats_load_the_same_vectors(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, newline="")
    kv = read_vectors(path)
    assert kv.index_to_key == WORDS
    np.testing.assert_array_equal(kv.vectors, VECTORS)


def test_gzip_and_binary_files_load(tmp_path):
    gz = tmp_path / "glove.txt.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as handle:
        handle.write(_lines(header=False))
    np.testing.assert_array_equal(read_vectors(gz).vectors, VECTORS)
    binary = write_word2vec(to_keyed_vectors(WORDS, VECTORS), tmp_path / "v.bin", binary=True)
    kv = read_vectors(binary)
    assert kv.index_to_key == WORDS
    np.testing.assert_array_equal(kv.vectors, VECTORS)


def test_cased_words_and_words_with_spaces_are_kept(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("King 1 2\n. . . 3 4\nking 5 6\n")
    kv = read_vectors(path)
    assert kv.index_to_key == ["King", ". . .", "king"]
    np.testing.assert_array_equal(kv["king"], [5, 6])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3 3\nthe 1 2 3\nking 1 2\nqueen 1 2 3\n", r"line 3: expected a word and 3 numbers, found 2"),
        ("the 1 2 3\nking 1 x 3\n", r"line 2: 'x' is not a number"),
        ("5 3\nthe 1 2 3\nking 1 2 3\n", r"header announces 5 vectors but the file holds 2; the file is truncated"),
        ("", r"holds no vectors"),
    ],
)
def test_corrupt_files_name_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_vectors(path)


def test_non_utf8_and_truncated_binary_files_are_clear_errors(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("the 1 2\ncaf\xe9 3 4\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"line 2: bytes that are not UTF-8"):
        read_vectors(path)
    binary = write_word2vec(to_keyed_vectors(WORDS, VECTORS), tmp_path / "v.bin", binary=True)
    binary.write_bytes(binary.read_bytes()[:-10])
    with pytest.raises(ConfigError, match=r"v.bin is not a readable word2vec binary file"):
        read_vectors(binary)
    with pytest.raises(ConfigError, match="not found"):
        read_vectors(tmp_path / "missing.txt")


def test_run_folders_expand_to_their_layer_files_with_provenance(tmp_path):
    import json

    for name in ("layer10.pc.txt", "layer2.pc.txt", "layer2.mean.txt"):
        write_word2vec(to_keyed_vectors(WORDS, VECTORS), tmp_path / name)
    names = ("layer10.pc.txt", "layer2.pc.txt", "layer2.mean.txt")
    manifest = {"distill_version": "test", "model": {"name": "minilm", "source": "minilm", "n_layers": 12},
                "layers": [2, 10], "pooling": ["pc", "mean"], "config": {},
                "corpus": {"files": [{"path": "/x/sts.txt"}], "lines": 1, "words": 3},
                "vocabulary": {"size": 3, "lowercase": True}, "files": list(names)}  # fmt: skip
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    files = expand_paths([tmp_path])
    assert [f.name for f in files] == ["layer2.pc.txt", "layer10.pc.txt", "layer2.mean.txt"]
    vec = load_vectors(files[1])
    assert vec.label == "minilm L10 pc"
    assert vec.meta == {
        "model": "minilm",
        "corpus": ["sts.txt"],
        "layer": 10,
        "pooling": "pc",
        "vocab_size": 3,
        "dim": 3,
    }
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="holds no layerL.P.txt"):
        expand_paths([tmp_path / "empty"])


def test_binary_and_text_files_match_gensims_writer(tmp_path):
    """Our writers, byte for byte gensim's binary file and, read back, its text file: words in gensim's order
    (descending count, ties in index order) with non-ASCII words and a count out of order."""
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(3)
    kv = KeyedVectors(vector_size=5)
    kv.add_vectors(["café", "naïve", "the", "king", "東京"], rng.standard_normal((5, 5)).astype(np.float32))
    kv.allocate_vecattrs(["count"], [np.int64])
    kv.expandos["count"][:] = [1, 5, 5, 2, 9]
    for binary in (True, False):
        ours = write_word2vec(kv, tmp_path / f"ours.{binary}", binary=binary)
        kv.save_word2vec_format(str(tmp_path / f"gensim.{binary}"), binary=binary)
        theirs = tmp_path / f"gensim.{binary}"
        if binary:
            assert ours.read_bytes() == theirs.read_bytes()
        a, b = (KeyedVectors.load_word2vec_format(str(p), binary=binary) for p in (ours, theirs))
        assert a.index_to_key == b.index_to_key == ["東京", "naïve", "the", "king", "café"]
        np.testing.assert_array_equal(a.vectors, b.vectors)
