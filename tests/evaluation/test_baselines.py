import json

import numpy as np
import pytest
from gensim.models import KeyedVectors

from distill.errors import ConfigError
from distill.evaluation.baselines import BaselineConfig, Method, parse_methods, read_vocab, train_baselines

from ..conftest import TINY_CORPUS


def test_baselines_train_on_exactly_the_given_words(tmp_path):
    vocab = tmp_path / "vocab.tsv"
    vocab.write_text("the\t100\nteacher\t10\nking\t9\nmarket\t5\nnever_seen\t1\n")
    config = BaselineConfig(
        corpus=(str(TINY_CORPUS),),
        out=tmp_path / "b",
        vocab=str(vocab),
        dim=16,
        epochs=2,
        glove_epochs=3,
        workers=1,
        progress=False,
    )
    result = train_baselines(config)
    assert set(result.files) == {"fasttext", "word2vec", "glove"}
    manifest = json.loads((tmp_path / "b" / "baselines.json").read_text())
    assert manifest["vocabulary"]["size"] == 4 and manifest["vocabulary"]["not_in_corpus"] == 1
    assert manifest["corpus"] == ["tiny_corpus.txt"]
    for method, path in result.files.items():
        kv = KeyedVectors.load_word2vec_format(str(path))
        assert kv.index_to_key[0] == "the" and set(kv.index_to_key) == {"the", "teacher", "king", "market"}
        assert kv.vector_size == 16 and np.isfinite(kv.vectors).all()
        assert manifest["files"][f"{method}.vec.txt"]["train_seconds"] == round(result.seconds[method], 2)
    again = train_baselines(config)  # one worker: gensim is deterministic; GloVe is seeded
    for path in result.files.values():
        assert path.read_bytes() == again.files[path.stem.split(".")[0]].read_bytes()


def test_without_a_vocabulary_min_count_decides(tmp_path):
    result = train_baselines(
        BaselineConfig(
            corpus=(str(TINY_CORPUS),),
            out=tmp_path,
            methods=(Method.WORD2VEC,),
            min_count=20,
            dim=8,
            epochs=1,
            progress=False,
        )
    )
    kv = KeyedVectors.load_word2vec_format(str(result.files["word2vec"]))
    counts = json.loads((tmp_path / "baselines.json").read_text())["vocabulary"]
    assert counts["source"] == "min_count=20" and len(kv) == counts["size"] > 0


def test_a_vocabulary_is_read_as_the_corpus_is(tmp_path):
    path = tmp_path / "words.txt"
    path.write_bytes("\ufeffking\t9\ncafe\u0301\nking\n\n".encode())  # a BOM, a decomposed é, a repeat
    assert read_vocab(str(path)) == ["king", "caf\u00e9"]
    path.write_bytes(b"\xff\xfek\x00i\x00")  # UTF-16: one line, not a traceback
    with pytest.raises(ConfigError, match="is not UTF-8"):
        read_vocab(str(path))


def test_bad_options_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown baseline 'glov'"):
        parse_methods("fasttext,glov")
    with pytest.raises(ConfigError, match="vocabulary .*vocab.tsv not found"):
        train_baselines(BaselineConfig(corpus=(str(TINY_CORPUS),), out=tmp_path, vocab=str(tmp_path)))
    (tmp_path / "upper.txt").write_text("THE\nKING\n")
    with pytest.raises(ConfigError, match="no word of the vocabulary occurs in the corpus"):
        train_baselines(BaselineConfig(corpus=(str(TINY_CORPUS),), out=tmp_path, vocab=str(tmp_path / "upper.txt")))
