import numpy as np
import pytest

from distill.config import AlonePool, Template
from distill.encoders import load_encoder
from distill.encoding import alone

WORDS = ["king", "queen", "apple", "river", "stone", "light", "night"]


def test_words_read_alone_are_kept_a_block_a_file_and_never_read_twice(tiny_bert_dir, tmp_path, monkeypatch):
    encoder = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (2,))
    monkeypatch.setattr(alone, "BLOCK", 3)
    fresh = alone.encode_alone(encoder, WORDS, (1, 2))
    saved = tmp_path / "alone"
    saved.mkdir()
    np.testing.assert_array_equal(alone.encode_alone(encoder, WORDS, (1, 2), saved=saved), fresh)
    blocks = sorted(saved.iterdir())
    assert len(blocks) == 3  # 3 + 3 + 1 words
    encode_batch, batches = alone.encode_batch, []

    def counted(*args, **kwargs):
        batches.append(1)
        return encode_batch(*args, **kwargs)

    monkeypatch.setattr(alone, "encode_batch", counted)
    np.testing.assert_array_equal(alone.encode_alone(encoder, WORDS, (1, 2), saved=saved), fresh)
    assert not batches  # a run's second try reads no block it kept
    damaged = next(b for b in blocks if np.load(b).shape[1] == 1)
    damaged.write_bytes(b"not an array")
    np.testing.assert_array_equal(alone.encode_alone(encoder, WORDS, (1, 2), saved=saved), fresh)
    assert len(batches) == 1  # the damaged block alone was read again
    batches.clear()
    other = alone.encode_alone(encoder, WORDS, (1, 2), template=Template.parse("concept"), saved=saved)
    assert len(batches) == 3 and len(list(saved.iterdir())) == 6  # another prompt: other blocks, other files
    assert not np.allclose(other, fresh)
    alone.encode_alone(encoder, WORDS[::-1], (1, 2), saved=saved)
    assert len(list(saved.iterdir())) == 9  # the same words in another order: other blocks
    both = {"template": Template.parse("concept"), "pool": AlonePool.BOTH}  # two readings a word, one pass
    fresh = alone.encode_alone(encoder, WORDS, (1, 2), **both)
    np.testing.assert_array_equal(alone.encode_alone(encoder, WORDS, (1, 2), saved=saved, **both), fresh)
    batches.clear()
    np.testing.assert_array_equal(alone.encode_alone(encoder, WORDS, (1, 2), saved=saved, **both), fresh)
    assert not batches and len(list(saved.iterdir())) == 12


def test_a_link_among_the_kept_blocks_is_never_followed(tiny_bert_dir, tmp_path, monkeypatch):
    encoder = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (1,))
    monkeypatch.setattr(alone, "BLOCK", 4)
    saved, outside = tmp_path / "alone", tmp_path / "outside.npy"
    saved.mkdir()
    fresh = alone.encode_alone(encoder, WORDS[:4], (1,), saved=saved)
    (block,) = saved.iterdir()
    np.save(outside, np.zeros_like(fresh))
    block.unlink()
    block.symlink_to(outside)  # a crafted work folder: the block points out of it
    np.testing.assert_array_equal(alone.encode_alone(encoder, WORDS[:4], (1,), saved=saved), fresh)
    assert not block.is_symlink() and np.load(outside).sum() == 0  # read again, the link replaced, not followed
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(np.load(outside), fresh)


def test_texts_read_for_the_teacher_are_kept_a_block_a_file(tiny_bert_dir, tmp_path, monkeypatch):
    from distill.tune.teacher import TeacherTargets

    encoder = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (2,))
    monkeypatch.setattr(alone, "BLOCK", 3)
    texts = [" ".join(WORDS[i : i + 3]) for i in range(len(WORDS))]
    fresh, kept, saved = TeacherTargets(2), TeacherTargets(2), tmp_path / "texts"
    saved.mkdir()
    alone.read_texts(encoder, texts, [fresh], batch_size=2)
    alone.read_texts(encoder, texts, [kept], batch_size=2, saved=saved)
    np.testing.assert_array_equal(kept.embeddings(), fresh.embeddings())
    assert kept.texts == fresh.texts and len(list(saved.iterdir())) == 3  # 3 + 3 + 1 texts
    encode_batch, batches = alone.encode_batch, []

    def counted(*args, **kwargs):
        batches.append(1)
        return encode_batch(*args, **kwargs)

    monkeypatch.setattr(alone, "encode_batch", counted)
    again = TeacherTargets(2)
    min(saved.iterdir()).write_bytes(b"not an archive")
    alone.read_texts(encoder, texts, [again], batch_size=2, saved=saved)
    np.testing.assert_array_equal(again.embeddings(), fresh.embeddings())
    assert again.texts == fresh.texts and 1 <= len(batches) <= 2  # the damaged block alone was read again
    alone.read_texts(encoder, texts, [TeacherTargets(1)], batch_size=2, saved=saved)
    assert len(list(saved.iterdir())) == 6  # another layer of the teacher: other blocks


def test_a_link_among_the_kept_blocks_of_texts_is_never_followed(tiny_bert_dir, tmp_path):
    from distill.tune.teacher import TeacherTargets

    encoder = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (2,))
    saved, outside = tmp_path / "texts", tmp_path / "outside.npz"
    saved.mkdir()
    fresh = TeacherTargets(2)
    alone.read_texts(encoder, WORDS, [fresh], saved=saved)
    (block,) = saved.iterdir()
    np.savez(outside, **{f"0.{key}": value * 0 for key, value in TeacherTargets(2).state().items()})
    before = outside.read_bytes()
    block.unlink()
    block.symlink_to(outside)  # a crafted work folder: the block points out of it
    again = TeacherTargets(2)
    alone.read_texts(encoder, WORDS, [again], saved=saved)
    np.testing.assert_array_equal(again.embeddings(), fresh.embeddings())
    assert not block.is_symlink() and outside.read_bytes() == before  # read again, the link replaced, not followed


def test_texts_of_every_length_run_sorted_and_come_back_in_the_order_given(tiny_bert_dir, monkeypatch):
    from distill.tune.teacher import TeacherTargets

    encoder = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (2,))
    texts = [" ".join(WORDS[: 1 + (i * 3) % len(WORDS)]) for i in range(9)]  # lengths out of order
    widths, encode_batch = [], alone.encode_batch

    def counted(model, layers, batch, *args, **kwargs):
        widths.append(int(batch.lengths.max()))
        return encode_batch(model, layers, batch, *args, **kwargs)

    monkeypatch.setattr(alone, "encode_batch", counted)
    together = TeacherTargets(2)
    alone.read_texts(encoder, texts, [together], batch_size=3)
    assert widths == sorted(widths) and len(widths) == 3  # like lengths batched together, shortest first
    assert together.texts == texts
    for i, text in enumerate(texts):  # each row is its own text's, as when read by itself
        by_itself = TeacherTargets(2)
        alone.read_texts(encoder, [text], [by_itself], batch_size=1)
        np.testing.assert_allclose(together.embeddings()[i], by_itself.embeddings()[0], rtol=1e-4, atol=1e-5)
    state = together.state()
    assert list(state["ids"]) == [-1 - i for i in range(len(texts))]
    words = alone.encode_alone(encoder, texts[:5], (2,), batch_size=2)
    for i, text in enumerate(texts[:5]):
        np.testing.assert_allclose(words[:, i], alone.encode_alone(encoder, [text], (2,))[:, 0], rtol=1e-4, atol=1e-5)
