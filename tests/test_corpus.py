import bz2
import gzip
import io
import lzma
import zipfile
from collections import Counter

import pytest

from distill.config import EncodingErrors
from distill.corpus import CorpusStats, build_vocabulary, count_words, iter_lines, read_word_list, word_spans
from distill.errors import ConfigError

from .conftest import DATA


def test_lines_from_plain_and_gzip_files_skip_blank_lines(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_text("one line\n\n  two  \n", encoding="utf-8")
    packed = tmp_path / "b.txt.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write("three\n")
    stats = CorpusStats()
    assert list(iter_lines([str(plain), str(packed)], stats=stats)) == ["one line", "two", "three"]
    assert (stats.lines, stats.empty_lines) == (3, 1)
    assert [f["lines"] for f in stats.files] == [3, 1]
    assert len(stats.files[0]["sha256"]) == 64


@pytest.mark.parametrize("suffix, compress", [(".bz2", bz2.compress), (".xz", lzma.compress)])
def test_bzip2_and_xz_files_and_folders_are_read_as_they_stream(tmp_path, suffix, compress):
    text = b"the king spoke\n\nthe queen listened\n"
    (tmp_path / "corpus").mkdir()
    packed = tmp_path / "corpus" / f"part.txt{suffix}"
    packed.write_bytes(compress(text))
    (tmp_path / "plain.txt").write_bytes(text)
    stats, plain = CorpusStats(), CorpusStats()
    assert list(iter_lines([str(tmp_path / "corpus")], stats=stats)) == ["the king spoke", "the queen listened"]
    assert list(iter_lines([str(tmp_path / "plain.txt")], stats=plain)) == ["the king spoke", "the queen listened"]
    assert stats.files[0]["sha256"] == plain.files[0]["sha256"]  # the text's digest, whatever holds it
    packed.write_bytes(compress(text)[:-12])  # truncated
    with pytest.raises(ConfigError, match="damaged or truncated"):
        list(iter_lines([str(packed)]))


def _zipped(name: str, text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, text)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "name, data, says",
    [
        ("c.txt", lzma.compress(b"words\n"), "xz-compressed data: give it a name that ends in .xz"),
        ("c.txt", gzip.compress(b"words\n", mtime=0), "gzip-compressed data: give it a name that ends in .gz"),
        ("c.zst", b"\x28\xb5\x2f\xfd" + bytes(20), "zstd-compressed data, which distill does not read"),
        ("c.zip", _zipped("c.txt", "words\n" * 500), "zip-compressed data, which distill does not read"),
    ],
    ids=["xz", "gzip", "zstd", "zip"],  # the data holds a time stamp: test workers must collect the same names
)
def test_compressed_data_under_another_name_is_named_for_what_it_is(tmp_path, name, data, says):
    (tmp_path / name).write_bytes(data)
    for errors in EncodingErrors:  # not read as text with replaced bytes either
        with pytest.raises(ConfigError, match=says):
            list(iter_lines([str(tmp_path / name)], errors))


def test_split_sentences_reads_each_sentence_of_a_line_as_a_line(tmp_path):
    corpus = tmp_path / "paragraphs.txt"
    corpus.write_text('He said "Go." Then he left! Did he? yes.\nIt cost 3.5 dollars. (See above.)\n')
    stats = CorpusStats()
    assert list(iter_lines([str(corpus)], stats=stats, sentences=True)) == [
        'He said "Go."',
        "Then he left!",
        "Did he? yes.",
        "It cost 3.5 dollars.",
        "(See above.)",
    ]
    assert stats.lines == 5 and list(iter_lines([str(corpus)]))[1] == "It cost 3.5 dollars. (See above.)"


def test_empty_corpus_is_an_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ConfigError, match="has no text"):
        list(iter_lines([str(empty)]))


def test_non_utf8_reports_file_and_line(tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("fine\ncaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin1.txt, line 2: bytes that are not UTF-8.*--encoding-errors replace"):
        list(iter_lines([str(bad)]))
    stats = CorpusStats()
    assert list(iter_lines([str(bad)], EncodingErrors.REPLACE, stats)) == ["fine", "caf\ufffd au lait"]
    assert stats.replaced_lines == 1


def test_word_spans_split_punctuation_like_bert():
    text = "Micron's profit, up 3%!"
    assert [text[s:e] for s, e in word_spans(text)] == ["Micron", "s", "profit", "up", "3"]


def test_vocabulary_filters_and_counts_what_it_drops():
    counts = Counter({"the": 10, "king": 6, "queen": 5, "rare": 2, "42": 9, "don_t": 7})
    vocab = build_vocabulary(counts, lowercase=True, min_count=5)
    assert vocab.words == ("the", "king", "queen")
    assert list(vocab.counts) == [10, 6, 5]
    assert vocab.dropped == {"not alphabetic": 2, "under min_count": 1}
    capped = build_vocabulary(counts, lowercase=True, min_count=5, max_size=2)
    assert capped.words == ("the", "king") and capped.dropped["over max_vocab"] == 1
    anything = build_vocabulary(counts, lowercase=True, min_count=5, alpha_only=False)
    assert "42" in anything.words


def test_word_list_keeps_listed_words_and_counts_the_unseen():
    counts = count_words(iter_lines([str(DATA / "tiny_corpus.txt")]), lowercase=True)
    listed = read_word_list(DATA / "word_list.txt", lowercase=True)
    vocab = build_vocabulary(counts, lowercase=True, word_list=listed)
    assert set(vocab.words) == {"king", "queen", "river", "unbelievable"}
    assert vocab.dropped == {"not in corpus": 1}  # zeppelin


def test_empty_vocabulary_is_an_error():
    with pytest.raises(ConfigError, match="vocabulary is empty.*lower --min-count"):
        build_vocabulary(Counter({"a": 1}), lowercase=True, min_count=5)


def test_case_policy():
    lines = ["The King met the king"]
    assert count_words(iter(lines), lowercase=True) == Counter({"the": 2, "king": 2, "met": 1})
    assert count_words(iter(lines), lowercase=False)["King"] == 1


def test_a_compressed_word_list_is_read_as_the_corpus_is(tmp_path):
    (tmp_path / "words.txt.xz").write_bytes(lzma.compress(b"king\t9\nQueen\n"))
    assert read_word_list(tmp_path / "words.txt.xz", lowercase=True) == ["king", "queen"]
    (tmp_path / "words.txt").write_bytes(gzip.compress(b"king\n", mtime=0))
    with pytest.raises(ConfigError, match="gzip-compressed data"):
        read_word_list(tmp_path / "words.txt", lowercase=True)
