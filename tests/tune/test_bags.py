"""Bags of a language's frequent words as more teacher targets (``--teacher-bags``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import distill
from distill.lexicon import frequent_words, word_bags
from distill.tune.options import TuneOptions
from distill.tune.teacher import read_teacher
from distill.tune.train import tune

from ..conftest import TINY_CORPUS


def test_bags_are_trained_on_but_never_held_out():
    """Sentences whose targets are their own start means (loss 0), then bags whose targets point the other way
    (loss 2): the held-out loss before training is 0 only if no bag is held out."""
    rng = np.random.default_rng(0)
    start = rng.normal(size=(40, 5)).astype(np.float32)
    ids = [rng.choice(40, size=rng.integers(2, 6), replace=False) for _ in range(300)]
    means = np.stack([start[i].mean(axis=0) for i in ids])
    targets = np.concatenate([means[:200], -means[200:]])
    options = TuneOptions(epochs=1, batch_size=32)
    assert tune(start, ids, targets, options, train_only=100).history[0]["held_out"] == pytest.approx(0, abs=1e-6)
    assert tune(start, ids, targets, options).history[0]["held_out"] > 0.1  # held out among all: bags too


def test_bags_are_seeded_and_drawn_from_the_frequent_words():
    pytest.importorskip("wordfreq")
    bags = word_bags(400, seed=3)
    assert bags == word_bags(400, seed=3) and bags != word_bags(400, seed=4)
    sizes = np.array([len(b.split()) for b in bags])
    assert sizes.min() == 5 and sizes.max() == 15
    words = [w for b in bags for w in b.split()]
    top = frequent_words(50_000)
    assert set(words) <= set(top)
    # drawn by the square root of the frequency: "the" far more often than a word of rank ~1,000, yet rare
    # words still come (more than half the draws fall past the 1,000 most frequent)
    rank = {w: i for i, w in enumerate(top)}
    assert words.count("the") > 10 * max(1, words.count(top[1000]))
    assert np.mean([rank[w] >= 1000 for w in words]) > 0.5
    assert word_bags(0, seed=3) == []


def test_the_teacher_reads_the_bags_after_the_corpus_sentences(tiny_bert_dir, tmp_path):
    pytest.importorskip("wordfreq")
    from transformers import AutoModel, AutoTokenizer

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      teacher=True, teacher_bags=6, seed=2, min_count=3, max_occurrences=20,
                      progress=False)  # fmt: skip
    texts, embeddings, bags = read_teacher(run.out)
    sentences = run.manifest["encoding"]["sentences"]
    assert texts[sentences:] == word_bags(6, seed=2) and len(embeddings) == sentences + 6 and bags == 6
    assert run.manifest["config"]["teacher_bags"] == 6 and "teacher_bags" in run.manifest["timings_seconds"]
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir)
    for text, embedding in zip(texts[sentences:], embeddings[sentences:]):
        with torch.no_grad():  # the teacher's own pooling: the mean of the last layer over every token
            last = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
        np.testing.assert_allclose(embedding, last.mean(dim=0).numpy(), atol=2e-3, rtol=2e-3)  # float16


def test_a_text_file_is_read_between_the_sentences_and_the_bags_and_tuned_as_sentences(tiny_bert_dir, tmp_path):
    pytest.importorskip("model2vec")
    pytest.importorskip("wordfreq")
    from transformers import AutoModel, AutoTokenizer

    from distill.serve.export import export_run
    from distill.serve.formats import Format
    from distill.tune.train import tune_run

    lines = ["Where is the nearest station?", "the cat sat on the mat", "A dog ran."]
    given = tmp_path / "texts.txt"
    given.write_text(f"  {lines[0]}\n\n{lines[1]}\n{lines[2]}  \n", encoding="utf-8")
    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      best=True, teacher=True, teacher_texts=given, teacher_bags=4, seed=2, min_count=3,
                      max_occurrences=20, progress=False)  # fmt: skip
    texts, embeddings, bags = read_teacher(run.out)
    sentences = run.manifest["encoding"]["sentences"]
    assert texts[sentences:] == lines + word_bags(4, seed=2) and bags == 4 and len(embeddings) == len(texts)
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir)
    for text, embedding in zip(lines, embeddings[sentences:]):
        with torch.no_grad():
            last = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
        np.testing.assert_allclose(embedding, last.mean(dim=0).numpy(), atol=2e-3, rtol=2e-3)
    name, _, result = tune_run(run.out, options=TuneOptions(epochs=1, batch_size=16))
    assert result.bags == 4 and result.sentences == sentences + 3 + 4  # the texts count as sentences
    (folder, _), *_ = export_run(run.out, vector_set=name, formats=[Format.MODEL2VEC], out=tmp_path / "m2v")
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"{sentences + 3:,} sentences of the corpus and a text file and 4 bags" in card


def test_tuning_counts_the_bags_apart_and_the_card_names_them(tiny_bert_dir, tmp_path):
    pytest.importorskip("model2vec")
    pytest.importorskip("wordfreq")
    from distill.serve.export import export_run
    from distill.serve.formats import Format
    from distill.tune.options import TuneOptions
    from distill.tune.train import tune_run

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      best=True, teacher=True, teacher_bags=40, min_count=3, max_occurrences=20,
                      progress=False)  # fmt: skip
    name, _, result = tune_run(run.out, options=TuneOptions(epochs=2, batch_size=16))
    sentences = run.manifest["encoding"]["sentences"]
    assert result.bags == 40 and result.sentences == sentences + 40  # every bag holds a known piece
    (folder, _), *_ = export_run(run.out, vector_set=name, formats=[Format.MODEL2VEC], out=tmp_path / "m2v")
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"{sentences:,} corpus sentences and 40 bags of the language's frequent words" in card
    done = subprocess.run([sys.executable, "-m", "distill", "tune", str(run.out), "--epochs", "1", "--no-progress"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and f"tuned on {sentences:,} sentences and 40 bags;" in done.stdout, done.stderr
    _, _, plain = tune_run(run.out, options=TuneOptions(epochs=1, batch_size=16, bags=False))
    assert plain.bags == 0 and plain.sentences == sentences  # --no-bags: the corpus sentences alone


def test_topic_bags_draw_their_share_from_one_seed_words_neighbours():
    pytest.importorskip("wordfreq")
    top = frequent_words(50_000)
    groups = np.minimum(np.arange(len(top)) // 31, len(top) // 31 - 1)  # made-up neighbourhoods: blocks of 31
    near = (31 * groups)[:, None] + np.arange(31)
    rank = {w: i for i, w in enumerate(top)}
    for share, least in ((1.0, 1.0), (0.5, 0.5)):
        bags = word_bags(300, seed=3, near=near, share=share)
        assert bags == word_bags(300, seed=3, near=near, share=share)
        for bag in bags:
            blocks = groups[[rank[w] for w in bag.split()]]
            assert np.bincount(blocks).max() >= np.ceil(least * len(blocks)) and 5 <= len(blocks) <= 15
    assert word_bags(300, seed=3, near=near, share=0.0) == word_bags(300, seed=3)  # share 0: the plain draw
    with pytest.raises(ValueError, match="rows for"):
        word_bags(3, seed=3, near=near[:10], share=0.5)


def test_nearest_words_is_exact_cosine_search():
    from distill.lexicon import nearest_words

    vectors = np.random.default_rng(0).normal(size=(200, 16)).astype(np.float32) * np.arange(1, 201)[:, None]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.argsort(-(unit @ unit.T), axis=1, kind="stable")[:, :5]
    near = nearest_words(vectors, k=5)
    assert near.shape == (200, 5) and (near[:, 0] == np.arange(200)).all()
    np.testing.assert_array_equal(near, expected)


def test_the_run_draws_topic_bags_from_the_teachers_reading_of_each_word(tiny_bert_dir, tmp_path, monkeypatch):
    pytest.importorskip("wordfreq")
    from transformers import AutoModel, AutoTokenizer

    import distill.pipeline
    from distill.lexicon import nearest_words

    seen = []
    monkeypatch.setattr(distill.pipeline, "BAG_WORDS", 300)  # the tiny model reads 300 words, not 50,000
    monkeypatch.setattr(distill.pipeline, "nearest_words", lambda v: seen.append(v) or nearest_words(v))
    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      teacher=True, teacher_bags=8, bag_topics=0.5, seed=2, min_count=3, max_occurrences=20,
                      progress=False)  # fmt: skip
    (embedded,) = seen
    words = frequent_words(300)
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir)
    with torch.no_grad():  # each word alone, pooled as the teacher pools: the mean of the last layer
        alone = np.stack([model(**tokenizer(w, return_tensors="pt")).last_hidden_state[0].mean(0) for w in words])
    np.testing.assert_allclose(embedded, alone, atol=1e-4, rtol=1e-4)
    texts, _, bags = read_teacher(run.out)
    expected = word_bags(8, seed=2, top=300, near=nearest_words(embedded), share=0.5)
    assert bags == 8 and texts[-8:] == expected and expected != word_bags(8, seed=2, top=300)
    assert run.manifest["config"]["bag_topics"] == 0.5
