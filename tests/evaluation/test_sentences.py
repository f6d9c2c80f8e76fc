"""Sentence embeddings for deployment: STS scoring, word weights, the teacher's embeddings, tuning, export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import distill
from distill.errors import ConfigError
from distill.evaluation.sentences import StsPairs, mean_of_words, score_sts, word_splitter
from distill.rundir import RunDir
from distill.serve.export import export_run
from distill.serve.formats import Format, read_npy
from distill.serve.weighting import (
    SentenceRecipe,
    Weighting,
    apply_recipe,
    remove_directions,
    sif_weights,
    usif_weights,
    zipf_weights,
)
from distill.tune.options import TuneOptions
from distill.tune.teacher import read_teacher
from distill.tune.train import train_table, tune, tune_run
from distill.vectors.keyed import to_keyed_vectors

from ..conftest import TINY_CORPUS


def test_sts_spearman_per_year_by_hand(rng):
    words = [f"w{i}" for i in range(8)]
    kv = to_keyed_vectors(words, rng.standard_normal((8, 4)).astype(np.float32))
    years = np.repeat([2012, 2013, 2014, 2015, 2016], 6)
    first, second = list(rng.choice(words, 30)), list(rng.choice(words, 30))
    pairs = StsPairs(years, first, second, rng.random(30) * 5)
    score = score_sts(mean_of_words(kv), pairs, "toy")
    unit = kv.vectors / np.linalg.norm(kv.vectors, axis=1, keepdims=True)
    cosines = np.array([unit[kv.key_to_index[a]] @ unit[kv.key_to_index[b]] for a, b in zip(first, second)])
    for year in (2012, 2013, 2014, 2015, 2016):
        mask = years == year
        assert score.per_year[year] == pytest.approx(100 * spearmanr(cosines[mask], pairs.scores[mask]).statistic)
    assert score.mean((2012, 2016)) == pytest.approx((score.per_year[2012] + score.per_year[2016]) / 2)
    assert score.n_pairs == 30 and score.sentences_per_second > 0
    # MTEB scores STS12 on its test split only: here the 2012 pairs after the first two
    test = np.ones(30, dtype=bool)
    test[:2] = False
    split = score_sts(mean_of_words(kv), StsPairs(years, first, second, pairs.scores, test), "toy")
    mask = (years == 2012) & test
    assert split.sts12_test == pytest.approx(100 * spearmanr(cosines[mask], pairs.scores[mask]).statistic)
    assert split.mteb() == {
        "STS12": split.sts12_test,
        **{f"STS{y % 100}": score.per_year[y] for y in range(2013, 2017)},
    }
    assert split.mteb_mean() == pytest.approx(np.mean(list(split.mteb().values())))
    assert split.mean_13_16() == pytest.approx(np.mean([score.per_year[y] for y in range(2013, 2017)]))


def test_sentences_split_as_the_exports_split_them():
    assert word_splitter(True)(["The King's men, again!"]) == [["the", "king", "'", "s", "men", ",", "again", "!"]]
    kv = to_keyed_vectors(["king", "men"], np.array([[1, 0], [0, 3]], dtype=np.float32))
    np.testing.assert_allclose(mean_of_words(kv)(["The KING's men?", "nothing known"]), [[0.5, 1.5], [0, 0]])


def test_weights_follow_their_formulas():
    counts = np.array([500, 300, 150, 50])
    p = counts / counts.sum()
    np.testing.assert_allclose(sif_weights(counts, 1e-3), 1e-3 / (1e-3 + p))
    inverse_rank = 1 / np.arange(2, 6)
    np.testing.assert_allclose(zipf_weights(4), 1e-4 / (1e-4 + inverse_rank / inverse_rank.sum()))
    zipf_counts = (1e6 / np.arange(1, 1001)).astype(int)  # 1,000 words, Zipfian
    w = usif_weights(zipf_counts, words_per_sentence=10)
    assert np.all(np.diff(w) >= 0)  # rarer words weigh more
    q = zipf_counts / zipf_counts.sum()
    alpha = (q > 1 - (1 - 1 / 1000) ** 10).mean()
    assert 0 < alpha < 1
    a = (1 - alpha) / (alpha * 1000 / 2)
    np.testing.assert_allclose(w, a / (a / 2 + q))


def test_removed_directions_are_the_weighted_top_singular_vectors(rng):
    x = rng.standard_normal((50, 6)).astype(np.float32) + np.array([5, 0, 0, 0, 0, 0], dtype=np.float32)
    weights = rng.random(50)
    out = remove_directions(x, weights, 1)
    _, _, vt = np.linalg.svd(x.astype(np.float64) * np.sqrt(weights)[:, None])
    np.testing.assert_allclose(out @ vt[0], 0, atol=1e-4)  # nothing left along the top direction
    np.testing.assert_allclose(out @ vt[1:].T, x @ vt[1:].T, atol=1e-4)  # the rest untouched


def test_sif_recipe_is_unit_vectors_times_weights(rng):
    x, counts = rng.standard_normal((5, 3)).astype(np.float32), np.array([40, 30, 20, 5, 5])
    out = apply_recipe(x, counts, SentenceRecipe(Weighting.SIF))
    expected = x / np.linalg.norm(x, axis=1, keepdims=True) * sif_weights(counts)[:, None]
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    np.testing.assert_array_equal(apply_recipe(x, None, SentenceRecipe(Weighting.NONE, unit=False)), x)
    with pytest.raises(ConfigError, match="needs the run's word counts"):
        apply_recipe(x, None, SentenceRecipe(Weighting.SIF))


@pytest.fixture(scope="module")
def teacher_run(tiny_bert_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("teacher") / "run"
    return distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), layers="1", best=True,
                       teacher=True, min_count=3, max_occurrences=50, progress=False)  # fmt: skip


def test_teacher_embeddings_are_the_models_own_mean_pooling(teacher_run, tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    texts, embeddings, bags = read_teacher(teacher_run.out)
    assert teacher_run.manifest["layers"] == [1, 2] and "teacher.npz" in teacher_run.manifest["files"]
    assert len(texts) == len(embeddings) == teacher_run.manifest["encoding"]["sentences"] and bags == 0
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir)
    one_window = [i for i, t in enumerate(texts) if len(tokenizer(t).input_ids) <= 128]
    assert len(one_window) < len(texts)  # the tiny corpus has sentences longer than the model's window
    for i in one_window[:: max(1, len(one_window) // 5)]:
        with torch.no_grad():
            last = model(**tokenizer(texts[i], return_tensors="pt")).last_hidden_state[0]
        np.testing.assert_allclose(embeddings[i], last.mean(dim=0).numpy(), atol=2e-3, rtol=2e-3)  # float16


def test_tuning_brings_sentence_means_toward_the_teacher(teacher_run):
    name, kv, result = tune_run(teacher_run.out, options=TuneOptions(epochs=15, batch_size=16))
    assert name == f"{teacher_run.manifest['best']}.tuned"
    assert result.best_epoch > 0 and result.history[result.best_epoch]["held_out"] < result.history[0]["held_out"]
    manifest = json.loads((teacher_run.out / "manifest.json").read_text())
    assert manifest["derived"][name]["sentence_ready"] and f"{name}.bin" in manifest["files"]
    np.testing.assert_array_equal(distill.load(teacher_run.out, vector_set=name).vectors, kv.vectors)


def test_a_tuned_set_reads_a_word_alone_where_its_untrained_rows_went(teacher_run):
    from distill.files import read_npz
    from distill.serve.anyword import open_fallback

    name, _, result = tune_run(teacher_run.out, options=TuneOptions(epochs=3, batch_size=16, blend=0.5))
    manifest = json.loads((teacher_run.out / "manifest.json").read_text())
    map_file = manifest["derived"][name]["alone_map"]
    assert map_file in manifest["files"]
    stored = read_npz(teacher_run.out / map_file, ("map",))["map"]
    np.testing.assert_allclose(stored, result.untrained_map(0.5), rtol=1e-6)
    untuned = open_fallback(teacher_run.out, teacher_run.manifest["best"], "alone")
    tuned = open_fallback(teacher_run.out, name, "alone")
    words = ["kingqqq", "zebra"]
    for word, plain, moved in zip(words, untuned.vectors(words), tuned.vectors(words)):
        np.testing.assert_allclose(moved, plain @ stored, rtol=1e-4, atol=1e-5, err_msg=word)
    assert distill.load(teacher_run.out, vector_set=name, oov="alone")["kingqqq"].shape == (stored.shape[0],)
    good = (teacher_run.out / map_file).read_bytes()
    (teacher_run.out / map_file).write_bytes(b"not an npz")
    with pytest.raises(ConfigError, match="make it again"):
        open_fallback(teacher_run.out, name, "alone")
    np.savez(teacher_run.out / map_file, map=np.eye(stored.shape[0] + 1, dtype=np.float32))  # square, wrong width
    with pytest.raises(ConfigError, match="damaged"):
        open_fallback(teacher_run.out, name, "alone")
    (teacher_run.out / map_file).write_bytes(good)  # the module's run, for the tests after this one


def test_tune_recommend_makes_the_tuned_set_the_runs_recommended_one(tiny_bert_dir, tmp_path):
    from typer.testing import CliRunner

    from distill.cli import app

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      best=True, teacher=True, min_count=3, max_occurrences=20, progress=False)  # fmt: skip
    untuned = run.manifest["best"]
    result = CliRunner().invoke(app, ["tune", str(run.out), "--set", "best", "--epochs", "2", "--batch-size", "16",
                                      "--blend", "0.25", "--recommend", "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["best"] == f"{untuned}.tuned" and manifest["derived"][manifest["best"]]["tuned_from"] == untuned
    assert manifest["derived"][manifest["best"]]["options"]["blend"] == 0.25
    np.testing.assert_array_equal(
        distill.load(run.out).vectors, distill.load(run.out, vector_set=f"{untuned}.tuned").vectors
    )


def test_tuning_trains_the_exports_whole_table_and_blend_scales_the_change(tiny_bert_dir, tmp_path):
    from model2vec import StaticModel

    from distill.serve.formats import LAST_RESORT
    from distill.serve.pieces import SetFallback

    # words seen under 15 times are out of the vocabulary: the export reads them as pieces, tuned with the words
    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      best=True, teacher=True, min_count=15, max_occurrences=50, progress=False)  # fmt: skip
    start = distill.load(run.out, vector_set=run.manifest["best"])
    counts = RunDir(run.out).counts(start.index_to_key)
    prepared = apply_recipe(start.vectors, counts, SentenceRecipe(Weighting.SIF), 1.0)
    name, kept, _ = tune_run(run.out, options=TuneOptions(epochs=2, batch_size=16, blend=0.0))
    np.testing.assert_allclose(kept.vectors, prepared, atol=1e-6)  # blend 0: the start, SIF baked in
    untrained = SetFallback.open(run.out, name).piece_vectors().vectors
    name, kv, _ = tune_run(run.out, options=TuneOptions(epochs=2, batch_size=16, blend=1.0))
    assert f"{name}.pieces.npz" in json.loads((run.out / "manifest.json").read_text())["files"]
    tuned = SetFallback.open(run.out, name).piece_vectors()
    assert tuned.scaled and np.abs(tuned.vectors - untrained).max() > 1e-3  # the pieces were trained too
    model_vocab = tuned.tokenizer.get_vocab()  # a piece whose text is a word of the table: the word's tuned row
    whole = [w for w in kv.index_to_key if w in model_vocab and tuned.counts[model_vocab[w]] > 0]
    assert len(whole) > 10
    np.testing.assert_allclose(tuned.vectors[[model_vocab[w] for w in whole]], kv[whole], atol=1e-6)
    [(path, _)] = export_run(run.out, vector_set=name, formats=[Format.MODEL2VEC], out=tmp_path / "m")
    model = StaticModel.from_pretrained(str(path))
    vocab = model.tokenizer.get_vocab()
    np.testing.assert_allclose(model.embedding[: len(kv.index_to_key)], kv.vectors, atol=1e-6)
    pieces = [t for t, row in vocab.items() if len(kv.index_to_key) <= row < len(vocab) - 1]
    ids = tuned.tokenizer.convert_tokens_to_ids(pieces)
    rows, stored = model.embedding[[vocab[t] for t in pieces]], np.any(tuned.vectors[ids] != 0, axis=1)
    np.testing.assert_allclose(rows[stored], tuned.vectors[ids][stored], atol=1e-6)
    # the others: letters the corpus never showed, read alone, weighed down from the tuned pieces' median norm
    assert all(len(t.removeprefix("##")) == 1 for t, kept in zip(pieces, stored) if not kept)
    have = np.linalg.norm(tuned.vectors, axis=1)
    expected = LAST_RESORT * np.median(have[have > 0])
    np.testing.assert_allclose(np.linalg.norm(rows[~stored], axis=1), expected, rtol=1e-4)


def test_split_sentences_gives_the_teacher_single_sentences_of_a_paragraph_corpus(tiny_bert_dir, tmp_path):
    lines = TINY_CORPUS.read_text().splitlines()
    paragraphs = tmp_path / "paragraphs.txt"
    paragraphs.write_text("\n".join(" ".join(lines[i : i + 3]) for i in range(0, len(lines), 3)) + "\n")
    run = distill.run(model=str(tiny_bert_dir), corpus=[str(paragraphs)], out=str(tmp_path / "run"), layers="1",
                      teacher=True, split_sentences=True, min_count=3, progress=False)  # fmt: skip
    texts = read_teacher(run.out).texts
    assert run.manifest["corpus"]["lines"] == len(lines) and set(texts) <= set(lines) and len(texts) > len(lines) / 2


def test_tune_refuses_a_teacher_of_another_width(rng):
    with pytest.raises(ConfigError, match="teacher's embeddings have 4 dimensions, the vectors 3"):
        tune(rng.standard_normal((2, 3)).astype(np.float32), [np.array([0, 1])] * 30, np.ones((30, 4)))


def test_export_bakes_sif_weights_in_unless_the_set_is_tuned(teacher_run, tmp_path):
    best = teacher_run.manifest["best"]
    kv = distill.load(teacher_run.out, vector_set=best)
    counts = RunDir(teacher_run.out).counts(kv.index_to_key)
    (path, _), = export_run(teacher_run.out, formats=[Format.NPY], out=tmp_path / "sif")  # fmt: skip
    expected = kv.vectors / np.linalg.norm(kv.vectors, axis=1, keepdims=True) * sif_weights(counts)[:, None]
    np.testing.assert_allclose(read_npy(path).vectors, expected, rtol=1e-5)
    info = json.loads((path / "export.json").read_text())
    assert info["sentence_recipe"]["weighting"] == "sif"
    (plain, _), = export_run(
        teacher_run.out, formats=[Format.NPY], out=tmp_path / "none", weighting="none"
    )  # fmt: skip
    np.testing.assert_array_equal(read_npy(plain).vectors, kv.vectors)


def test_projector_export_is_the_tsv_pair_the_embedding_projector_loads(teacher_run, tmp_path):
    ((path, _),) = export_run(teacher_run.out, formats=[Format.PROJECTOR], out=tmp_path / "p", weighting="none")
    kv = distill.load(teacher_run.out)
    vectors = np.loadtxt(path / "vectors.tsv", delimiter="\t", dtype=np.float32)
    np.testing.assert_array_equal(vectors, kv.vectors)
    metadata = (path / "metadata.tsv").read_text().splitlines()
    assert metadata[0] == "word\tcount" and [m.split("\t")[0] for m in metadata[1:]] == kv.index_to_key


def test_push_to_hub_offline_fails_with_one_line_after_writing_the_export(teacher_run, tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "300"}
    done = subprocess.run([sys.executable, "-m", "distill", "export", str(teacher_run.out), "--format", "model2vec",
                           "--out", str(tmp_path / "m"), "--push-to-hub", "someone/static-model"],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot push" in lines[0] and "someone/static-model" in lines[0], done.stderr
    from huggingface_hub import ModelCard

    card = (tmp_path / "m" / "README.md").read_text()
    best = teacher_run.manifest["best"]
    assert f"- vector set: `{best}`" in card and "- teacher: " in card and "tiny_corpus.txt" in card
    assert 'StaticModel.from_pretrained("someone/static-model")' in card and "# someone/static-model" in card
    assert ModelCard.load(tmp_path / "m" / "README.md").data.model_name == "someone/static-model"
    assert (tmp_path / "m" / "model.safetensors").is_file()  # the export itself stands


def test_a_slow_encoder_shows_progress_over_chunks_with_the_same_vectors():
    from distill.evaluation.sentences import with_progress

    calls = []

    def encode(sentences):
        calls.append(len(sentences))
        return np.array([[len(s), 1.0] for s in sentences])

    out = with_progress(encode, "encoding", disable=True, chunk=2)(["a", "bb", "ccc"])
    assert calls == [2, 1] and out.tolist() == [[1, 1], [2, 1], [3, 1]] and out.dtype == np.float32


def test_tuning_on_a_sample_of_the_sentences_is_seeded(teacher_run):
    run = RunDir(teacher_run.out)
    name, options = teacher_run.manifest["best"], TuneOptions(epochs=1, batch_size=16)
    full = train_table(run, name, SentenceRecipe(Weighting.SIF), options)
    first, again = (train_table(run, name, SentenceRecipe(Weighting.SIF), options, sentences=30) for _ in range(2))
    assert full.result.sentences > 30 and first.result.sentences == again.result.sentences == 30
    np.testing.assert_array_equal(first.result.vectors, again.result.vectors)
    assert np.abs(first.result.vectors - full.result.vectors).max() > 1e-4  # fewer targets, another training
