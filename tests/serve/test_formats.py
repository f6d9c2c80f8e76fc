"""Every export format through its real loader, compression error bounds, FAISS index kinds."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from gensim.models import KeyedVectors

import distill
from distill.config import CAUSAL_TEMPLATE, ENCODER_TEMPLATE, TEMPLATES
from distill.errors import ConfigError
from distill.rundir import RunDir
from distill.serve.compress import fit_pca, quantize
from distill.serve.export import export_run, parse_formats
from distill.serve.formats import Format, read_npy
from distill.serve.search import Searcher
from distill.vectors.faiss_index import build_faiss_index
from distill.vectors.keyed import l2_normalize

from ..conftest import TINY_CORPUS


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_bert_dir):
    out = tmp_path_factory.mktemp("export-run")
    distill.run(
        model=str(tiny_bert_dir),
        out=str(out),
        corpus=[str(TINY_CORPUS)],
        layers="1",
        min_count=2,
        max_occurrences=5,
        progress=False,
    )
    return out


def test_int8_and_float16_stay_within_their_error_bounds(rng):
    x = rng.standard_normal((50, 16)).astype(np.float32) * rng.uniform(0.1, 10, (50, 1)).astype(np.float32)
    bounds = {
        "vector": np.abs(x).max(axis=1, keepdims=True),
        "dimension": np.abs(x).max(axis=0),
        "table": np.abs(x).max(),
    }
    for scale, bound in bounds.items():
        q = quantize(x, "int8", scale)
        assert q.values.dtype == np.int8 and q.nbytes < x.nbytes / 3
        assert np.all(np.abs(q.dequantize() - x) <= bound / 127 / 2 + 1e-6)
    half = quantize(x, "float16").dequantize()
    np.testing.assert_allclose(half, x, rtol=2**-11)
    with pytest.raises(ConfigError, match="float16 range"):
        quantize(np.array([[1e6]]), "float16")


def test_pca_keeps_the_top_directions(rng):
    basis = np.linalg.qr(rng.standard_normal((8, 8)))[0]
    x = (rng.standard_normal((300, 8)) * [10, 5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]) @ basis.T
    pca = fit_pca(x.astype(np.float32), 2)
    assert pca.explained_variance_ratio > 0.99 and pca.transform(x).shape == (300, 2)
    with pytest.raises(ConfigError, match="--dims must be between 1 and 8"):
        fit_pca(x, 9)


def test_every_format_round_trips_through_its_loader(run_dir, tmp_path):
    kv = distill.load(run_dir, layer=1)
    written = dict((p.name, p) for p, _ in export_run(run_dir, formats=list(Format), out=tmp_path, weighting="none"))
    text = KeyedVectors.load_word2vec_format(str(written["layer1.pc.txt"]))
    assert text.index_to_key == kv.index_to_key
    native = KeyedVectors.load(str(written["layer1.pc.kv"]), mmap="r")
    np.testing.assert_array_equal(native.vectors, kv.vectors)
    assert native.get_vecattr(kv.index_to_key[0], "count") >= native.get_vecattr(kv.index_to_key[-1], "count")
    np.testing.assert_array_equal(read_npy(written["layer1.pc.npy"]).vectors, kv.vectors)

    from model2vec import StaticModel
    from sentence_transformers import SentenceTransformer

    m2v = StaticModel.from_pretrained(str(written["layer1.pc.model2vec"]))
    st = SentenceTransformer(str(written["layer1.pc.st"]), device="cpu")
    a, b = kv.index_to_key[3], kv.index_to_key[7]
    expected = (kv[a] + kv[b]) / 2  # sentence vector = mean of its words' vectors (unknown words: test_oov_...)
    sentence = f"{a.upper()}, {b}!"  # casing folded (uncased model); punctuation split off
    np.testing.assert_allclose(m2v.encode([sentence])[0], expected, atol=1e-6)
    st_vec = st.encode([sentence])[0]
    cos = st_vec @ expected / np.linalg.norm(st_vec) / np.linalg.norm(expected)
    assert cos == pytest.approx(1.0, abs=1e-6)


def test_compressed_exports_read_back_close_to_the_originals(run_dir, tmp_path):
    kv = distill.load(run_dir, layer=1)
    written = dict(
        (p.name, p)
        for p, _ in export_run(
            run_dir, formats=[Format.NPY, Format.MODEL2VEC], out=tmp_path, dtype="int8", top_words=20, weighting="none"
        )
    )
    small = read_npy(written["layer1.pc.top20.int8.npy"])
    assert small.index_to_key == kv.index_to_key[:20]
    bound = np.abs(kv.vectors[:20]).max(axis=1, keepdims=True) / 254 + 1e-6
    assert np.all(np.abs(small.vectors - kv.vectors[:20]) <= bound)
    from model2vec import StaticModel

    folder = written["layer1.pc.top20.int8.model2vec"]
    m2v = StaticModel.from_pretrained(str(folder))
    assert m2v.embedding.dtype == np.int8 and m2v.weights is None  # model2vec's own int8: its fast path
    table_scale = json.loads((folder / "export.json").read_text())["int8_table_scale"]
    assert table_scale == pytest.approx(np.abs(kv.vectors[:20]).max() / 127, rel=1e-6)  # no pieces in this run
    for i in (0, 5, 19):
        read = m2v.encode([kv.index_to_key[i]])[0] * table_scale
        np.testing.assert_array_less(np.abs(read - kv.vectors[i]), table_scale / 2 + 1e-6)
    reduced = export_run(run_dir, formats=[Format.NPY], out=tmp_path / "d4", dims=4)
    assert reduced[0][0] == tmp_path / "d4"  # one folder format: --out is the folder itself
    assert read_npy(tmp_path / "d4").vector_size == 4
    with pytest.raises(ConfigError, match="holds files that distill did not export"):
        export_run(run_dir, formats=[Format.NPY], out=tmp_path)  # never replaces a folder of the user's
    with pytest.raises(ConfigError, match="unknown format 'onnx'"):
        parse_formats("kv,onnx")


def test_index_kinds_against_exact_search(rng):
    centers = rng.standard_normal((20, 32))
    x = (centers[rng.integers(0, 20, 2000)] + 0.3 * rng.standard_normal((2000, 32))).astype(np.float32)
    unit = l2_normalize(x)
    exact = np.argsort(-(unit[:50] @ unit.T), axis=1)[:, :10]
    _, flat = build_faiss_index(x, "flat").search(unit[:50], 10)
    np.testing.assert_array_equal(flat, exact)
    for kind, floor in (("hnsw", 0.95), ("ivfpq", 0.3)):  # PQ codes of 2,000 points: coarse by design
        _, ids = build_faiss_index(x, kind).search(unit[:50], 10)
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact)])
        assert recall >= floor, (kind, recall)
    with pytest.raises(ValueError, match="unknown index kind"):
        build_faiss_index(x, "lsh")


def test_searcher_answers_like_gensim_and_saves_its_index(run_dir):
    kv = distill.load(run_dir, layer=1)
    searcher = Searcher.open(run_dir, layer=1, kind="hnsw")
    assert (run_dir / "layer1.pc.hnsw.faiss").is_file()
    word = kv.index_to_key[2]
    hits = Searcher.open(run_dir, layer=1).neighbors([word, "qqqzzz"], k=5)
    assert [w for w, _ in hits[0]] == [w for w, _ in kv.most_similar(word, topn=5)]
    assert hits[1] is None  # none of its pieces was ever seen
    assert searcher.similarity(word, kv.index_to_key[4]) == pytest.approx(
        kv.similarity(word, kv.index_to_key[4]), abs=1e-6
    )


@pytest.fixture(scope="module")
def pieces_run(tmp_path_factory, tiny_bert_dir):
    out = tmp_path_factory.mktemp("pieces-run")
    distill.run(
        model=str(tiny_bert_dir),
        out=str(out),
        corpus=[str(TINY_CORPUS)],
        layers="1",
        pooling="mean",
        min_count=1,
        max_occurrences=10_000,
        pieces=True,
        progress=False,
    )
    return out


def test_piece_vectors_are_the_mean_of_every_occurrence_of_the_piece(pieces_run):
    from distill.serve.pieces import PieceVectors

    kv = distill.load(pieces_run, layer=1, pooling="mean")
    pieces = PieceVectors.open(pieces_run, 1)
    assert pieces.pieces("king") == pieces.tokenizer.convert_tokens_to_ids(["king"])
    # every occurrence of "king" is one piece and all are encoded: its mean vector is the piece's vector
    np.testing.assert_allclose(pieces.vector("king"), kv["king"], atol=1e-5)
    # an OOV word whose first piece was seen and whose other pieces never were: that piece's vector
    oov = "kingqqq"
    ids = pieces.pieces(oov)
    assert pieces.tokenizer.convert_ids_to_tokens(ids)[0] == "king"
    assert all(pieces.counts[i] == 0 for i in ids[1:])
    np.testing.assert_allclose(pieces.vector(oov), kv["king"], atol=1e-5)
    assert pieces.vector("qqqzzz") is None  # no piece ever seen


def test_load_answers_any_word_and_says_where_its_vector_came_from(pieces_run, tmp_path):
    kv = distill.load(pieces_run, layer=1, pooling="mean")
    assert isinstance(kv, KeyedVectors) and "kingqqq" not in kv  # the vocabulary stays gensim's
    assert [kv.source(w) for w in ("king", "kingqqq", "qqqzzz")] == ["vocabulary", "pieces", "none"]
    mean_norm = np.linalg.norm(kv.vectors, axis=1).mean()
    king = kv["king"] / np.linalg.norm(kv["king"])
    np.testing.assert_allclose(kv["kingqqq"], king * mean_norm, rtol=1e-5)  # the piece "king" is the word
    np.testing.assert_allclose(kv.get_vector("kingqqq", norm=True), king, rtol=1e-5)
    assert kv.similarity("kingqqq", "king") == pytest.approx(1.0, abs=1e-5)
    assert kv.most_similar("kingqqq", topn=1)[0] == ("king", pytest.approx(1.0, abs=1e-5))
    with pytest.raises(KeyError, match="none of its pieces was seen"):
        kv["qqqzzz"]
    # an uncased run folded case: "King" is the vocabulary's word, as the model reads it, and never its own neighbour
    assert kv.source("King") == "vocabulary" and "King" not in kv
    np.testing.assert_array_equal(kv["King"], kv["king"])
    assert kv.most_similar("King", topn=3) == kv.most_similar("king", topn=3)
    from distill.serve.search import Searcher

    searcher = Searcher.open(pieces_run, layer=1, pooling="mean")
    assert searcher.vector("King")[1] == "vocabulary" and searcher.neighbors(["King"], 3) == searcher.neighbors(
        ["king"], 3
    )
    kv.save(str(tmp_path / "any.kv"))  # gensim's own format: the fallback is opened again on demand
    again = KeyedVectors.load(str(tmp_path / "any.kv"))
    np.testing.assert_allclose(again["kingqqq"], kv["kingqqq"])


def test_oov_words_get_neighbours_and_sentence_vectors_from_their_pieces(pieces_run, tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "distill", "neighbors", str(pieces_run), "kingqqq", "-k", "2", "--pooling", "mean"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kingqqq (from its pieces): king 1.000")
    written = export_run(pieces_run, pooling="mean", formats=[Format.SENTENCE_TRANSFORMERS], out=tmp_path / "st")
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(written[0][0]), device="cpu")
    oov, known = st.encode(["kingqqq", "king"])
    assert oov @ known / np.linalg.norm(oov) / np.linalg.norm(known) == pytest.approx(1.0, abs=1e-5)  # q: unseen
    from model2vec import StaticModel

    written = export_run(pieces_run, pooling="mean", formats=[Format.MODEL2VEC], out=tmp_path / "m2v")
    m2v = StaticModel.from_pretrained(str(written[0][0]))
    oov2, known2 = m2v.encode(["kingqqq", "king"])
    assert oov2 @ known2 / np.linalg.norm(oov2) / np.linalg.norm(known2) == pytest.approx(1.0, abs=1e-5)
    assert oov2 @ oov / np.linalg.norm(oov2) / np.linalg.norm(oov) == pytest.approx(1.0, abs=1e-5)  # as in ST


def test_the_recommended_set_exports_as_a_folder_its_loader_reads(tiny_bert_dir, tmp_path):
    from model2vec import StaticModel

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      best=True, min_count=3, max_occurrences=5, progress=False)  # fmt: skip
    best = run.manifest["best"]
    # the default set: best
    ((path, _),) = export_run(run.out, formats=[Format.MODEL2VEC], out=tmp_path / "model", weighting="none")
    assert path == tmp_path / "model"
    model = StaticModel.from_pretrained(str(path))
    word = run[best].index_to_key[2]
    np.testing.assert_allclose(model.encode([word])[0], run[best][word], atol=1e-6)
    assert json.loads((path / "export.json").read_text())["set"] == best
    from huggingface_hub import ModelCard

    card = ModelCard.load(path / "README.md")  # the Hub's metadata, not model2vec's generic card
    assert card.data.library_name == "model2vec" and "static-embeddings" in card.data.tags
    assert card.data.model_name == "model" and card.data.license == "other" and card.data.base_model is None
    assert card.data.pipeline_tag == "sentence-similarity" and f"- vector set: `{best}`" in card.text
    assert "- stored:" not in card.text  # kept whole, in float32
    assert ".tmp-" not in card.content and str(tmp_path) not in card.content
    assert all(f.stat().st_mode & 0o044 == 0o044 for f in path.iterdir())  # readable by others
    again = export_run(run.out, vector_set="layer1.pc", formats=[Format.MODEL2VEC], out=tmp_path / "model")
    assert json.loads((again[0][0] / "export.json").read_text())["set"] == "layer1.pc"  # an export is replaced
    with pytest.raises(ConfigError, match="has no set layer2.pc; its sets: layer1.pc, layer2.mean.unit"):
        export_run(run.out, vector_set="layer2.pc", formats=[Format.NPY], out=tmp_path / "x")
    assert distill.load(run.out).index_to_key == run[best].index_to_key  # load's default is the recommended set too


def test_a_derived_set_falls_back_to_its_layers_piece_vectors_combined_as_the_set(tiny_bert_dir, tmp_path):
    from scipy.stats import spearmanr

    from distill.derived.recipe import Recipe, derive
    from distill.evaluation.datasets import SimilarityDataset
    from distill.evaluation.metrics import Oov
    from distill.evaluation.report import EvalOptions, score_vectors
    from distill.serve.pieces import PieceVectors, SetFallback

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"),
                      layers="1,2", pooling="mean", pieces=True, min_count=3, progress=False)  # fmt: skip
    best, kv = derive(run.out, Recipe(layers="1-2", pooling="mean"))
    layers = [1, 2]
    fallback = SetFallback.open(run.out, best)
    per_layer = PieceVectors.open_layers(run.out, layers)
    unit = [v / np.linalg.norm(v) for v in (p.vector("kingqqq") for p in per_layer)]
    np.testing.assert_allclose(fallback.vector("kingqqq"), np.mean(unit, axis=0), rtol=1e-6)
    manifest = json.loads((run.out / "manifest.json").read_text())
    manifest["derived"][f"{best}.tuned"] = {"tuned_from": best, "sentence_ready": True}
    (run.out / "manifest.json").write_text(json.dumps(manifest))
    tuned = SetFallback.open(run.out, f"{best}.tuned")  # a tuned set falls back as the set it was tuned from
    np.testing.assert_array_equal(tuned.vector("kingqqq"), fallback.vector("kingqqq"))
    from distill.serve.anyword import open_fallback

    assert open_fallback(run.out, f"{best}.tuned", "alone") is None  # tuned without keeping its map: no reading

    a, b, c = kv.index_to_key[:3]
    data = SimilarityDataset("toy", ((a, b), (a, "kingqqq"), (b, "kingqqq"), (c, a)), (1.0, 3.0, 2.0, 4.0))
    options = EvalOptions(oov=(Oov.STANDARD, Oov.PAPER, Oov.PIECES))
    standard, _, pieces = score_vectors(kv, options, {"toy": data}, {Oov.PIECES: fallback})
    assert (standard.n_covered, pieces.n_covered, pieces.oov) == (2, 4, "pieces")
    vec = {w: kv[w] / np.linalg.norm(kv[w]) for w in (a, b, c)}
    vec["kingqqq"] = fallback.vector("kingqqq") / np.linalg.norm(fallback.vector("kingqqq"))
    cosines = [float(vec[x] @ vec[y]) for x, y in data.pairs]
    assert pieces.score == pytest.approx(spearmanr(cosines, data.scores).statistic, abs=1e-9)
    assert np.isnan(score_vectors(kv, options, {"toy": data})[2].score)  # no fallback: not scored


def _read_alone(
    model_dir, word: str, layers: list[int], prompt: str = TEMPLATES[ENCODER_TEMPLATE], whole: bool = False
) -> list[np.ndarray]:
    """The word's state in each layer when the model reads ``prompt`` with the word in it (``[CLS] the word
    "queenly" [SEP]``), the word's own pieces averaged (found by the tokenizer's character offsets); ``whole``:
    every token of the prompt averaged, [CLS] and [SEP] left out."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir)
    start = prompt.index("{word}")
    encoded = tokenizer(prompt.replace("{word}", word), return_tensors="pt", return_offsets_mapping=True)
    spans = encoded.pop("offset_mapping")[0].tolist()
    own = [i for i, (a, b) in enumerate(spans) if b > a and a >= start and b <= start + len(word)]
    assert own and (prompt == "{word}" or len(own) < len(spans) - 2)  # the prompt's pieces are left out
    if whole:
        own = [i for i, (a, b) in enumerate(spans) if b > a]
    with torch.no_grad():
        states = model(**encoded, output_hidden_states=True).hidden_states
    return [states[layer][0, own].mean(dim=0).numpy() for layer in layers]


def test_oov_alone_reads_a_word_the_run_lacks_with_the_runs_own_model(pieces_run, tiny_bert_dir):
    kv = distill.load(pieces_run, layer=1, pooling="mean", oov="alone")
    assert "kingqqq" not in kv and [kv.source(w) for w in ("king", "kingqqq")] == ["vocabulary", "alone"]
    (alone,) = _read_alone(tiny_bert_dir, "kingqqq", [1])  # three pieces, averaged
    np.testing.assert_allclose(kv.get_vector("kingqqq", norm=True), alone / np.linalg.norm(alone), atol=1e-5)
    mean_norm = np.linalg.norm(kv.vectors, axis=1).mean()
    assert np.linalg.norm(kv["qqqzzz"]) == pytest.approx(mean_norm, rel=1e-5)  # no piece seen: still read
    assert not np.allclose(kv.get_vector("kingqqq", norm=True), distill.load(pieces_run, layer=1, pooling="mean")
                           .get_vector("kingqqq", norm=True), atol=1e-3)  # fmt: skip
    with pytest.raises(ConfigError, match="unknown OOV fallback"):
        distill.load(pieces_run, oov="guess")

    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "distill", "neighbors", str(pieces_run), "kingqqq", "-k", "2", "--pooling", "mean",
         "--oov", "alone"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kingqqq (read alone by the model): ")


def test_alone_vectors_of_a_derived_set_combine_its_layers_and_score_every_pair(tiny_bert_dir, tmp_path):
    from scipy.stats import spearmanr

    from distill.derived.recipe import Recipe, derive
    from distill.evaluation.datasets import SimilarityDataset
    from distill.evaluation.metrics import Oov
    from distill.evaluation.report import EvalOptions, run_fallback, score_vectors

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"),
                      layers="1,2", pooling="mean", pieces=False, min_count=3, progress=False)  # fmt: skip
    best, kv = derive(run.out, Recipe(layers="1-2", pooling="mean"))
    fallback = run_fallback(run.out / f"{best}.txt", Oov.ALONE)
    assert fallback.source == "alone" and fallback.layers == [1, 2]
    per_layer = _read_alone(tiny_bert_dir, "queenly", [1, 2])
    expected = np.mean([v / np.linalg.norm(v) for v in per_layer], axis=0)
    np.testing.assert_allclose(fallback.vector("Queenly"), expected, atol=1e-5)  # the run's case folding

    a, b, c = kv.index_to_key[:3]
    data = SimilarityDataset("toy", ((a, b), (a, "queenly"), (b, "queenly"), (c, a)), (1.0, 3.0, 2.0, 4.0))
    options = EvalOptions(oov=(Oov.STANDARD, Oov.PIECES, Oov.ALONE))
    standard, pieces, alone = score_vectors(kv, options, {"toy": data}, {Oov.ALONE: fallback})
    assert (standard.n_covered, alone.n_covered, alone.oov) == (2, 4, "alone")
    assert np.isnan(pieces.score)  # a run without piece vectors has no pieces fallback
    vec = {w: kv[w] / np.linalg.norm(kv[w]) for w in (a, b, c)}
    vec["queenly"] = expected / np.linalg.norm(expected)
    cosines = [float(vec[x] @ vec[y]) for x, y in data.pairs]
    assert alone.score == pytest.approx(spearmanr(cosines, data.scores).statistic, abs=1e-6)


def test_alone_weight_adds_each_words_reading_alone_to_the_recommended_set(tiny_bert_dir, tmp_path):
    from distill.derived.recipe import Recipe, derive

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1-2",
                      pooling="mean", best=True, alone_weight=0.5, min_count=3, progress=False)  # fmt: skip
    name, recipe = run.manifest["best"], run.manifest["derived"][run.manifest["best"]]
    layers = recipe["layers"]
    assert name == f"layer{layers[-1]}.mean.alone0.5" and recipe["alone"] == 0.5
    kv = run["best"]
    span = f"{layers[0]}-{layers[-1]}"
    _, plain = derive(run.out, Recipe(layers=span, pooling="mean"))  # the same set without the words read alone
    for word in kv.index_to_key[:3]:
        per_layer = _read_alone(tiny_bert_dir, word, layers)
        alone = np.mean([v / np.linalg.norm(v) for v in per_layer], axis=0)
        expected = plain[word] / np.linalg.norm(plain[word]) + 0.5 * alone / np.linalg.norm(alone)
        np.testing.assert_allclose(kv[word], expected, atol=1e-5)
    again_name, again = derive(run.out, Recipe(layers=span, pooling="mean", alone=0.5))  # from the files, later
    assert again_name == name
    np.testing.assert_allclose(again.vectors, kv.vectors, atol=1e-6)


def test_words_are_read_alone_in_the_runs_template_and_older_runs_read_them_bare(pieces_run, tiny_bert_dir, tmp_path):
    import shutil

    from distill.config import Template
    from distill.serve.alone import AloneFallback

    manifest = json.loads((pieces_run / "manifest.json").read_text())
    assert manifest["config"]["alone_template"] == ENCODER_TEMPLATE  # an encoder's default, recorded
    reader = AloneFallback.open(pieces_run, "layer1.mean")
    (prompted,) = _read_alone(tiny_bert_dir, "kingqqq", [1])
    assert reader.template == Template.parse(ENCODER_TEMPLATE)
    np.testing.assert_allclose(reader.vector("kingqqq"), prompted, atol=1e-5)

    old = Path(shutil.copytree(pieces_run, tmp_path / "old"))  # a run made before templates: read bare
    del manifest["config"]["alone_template"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    (bare,) = _read_alone(tiny_bert_dir, "kingqqq", [1], prompt="{word}")
    np.testing.assert_allclose(AloneFallback.open(old, "layer1.mean").vector("kingqqq"), bare, atol=1e-5)
    assert not np.allclose(bare, prompted, atol=1e-3)


def test_language_words_are_read_alone_into_the_recommended_set(tiny_bert_dir, tmp_path):
    from distill.derived.recipe import Recipe, derive
    from distill.lexicon import frequent_words

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1-2",
                      pooling="mean", best=True, alone_weight=0.5, language_words=300, min_count=3,
                      progress=False)  # fmt: skip
    name, recipe = run.manifest["best"], run.manifest["derived"][run.manifest["best"]]
    kv, layers = run["best"], recipe["layers"]
    corpus_words = run[layers[0], "mean"].index_to_key
    added = [w for w in frequent_words(300) if w not in set(corpus_words)]
    assert name.endswith(".alone0.5.words300") and recipe["words_added"] == len(added) > 100
    assert run.manifest["vocabulary"]["from_language_words"] == len(added)
    assert kv.index_to_key == corpus_words + added  # the corpus words first, as the layer sets list them
    assert all(kv.get_vecattr(w, "count") == 0 for w in added[:5])
    for word in added[:3]:  # each read alone in the run's prompt, its layers' unit vectors averaged
        alone = np.mean([v / np.linalg.norm(v) for v in _read_alone(tiny_bert_dir, word, layers)], axis=0)
        np.testing.assert_allclose(kv.get_vector(word, norm=True), alone / np.linalg.norm(alone), atol=1e-5)
    span = f"{layers[0]}-{layers[-1]}"
    again_name, again = derive(run.out, Recipe(layers=span, pooling="mean", alone=0.5, words=300))  # later, too
    assert again_name == name and again.index_to_key == kv.index_to_key
    np.testing.assert_allclose(again.vectors, kv.vectors, atol=1e-6)
    api_name, api = distill.derive(run.out, span, "mean", alone=0.5, language_words=300, progress=False)
    assert api_name == name and api.index_to_key == kv.index_to_key
    # the sentence export reads them too, weighed as words the corpus never showed (SIF: count 0, weight 1)
    from distill.serve.export import prepared_set

    _, counts, recipe, prepared = prepared_set(RunDir(run.out), name)
    assert counts is not None and not counts[len(corpus_words) :].any() and counts[: len(corpus_words)].all()
    assert recipe.weighting.value == "sif"
    np.testing.assert_allclose(prepared[-len(added) :], kv.get_normed_vectors()[-len(added) :], atol=1e-6)
    # --alone-pool both: the run writes what derive writes, and a language word is its pieces' reading plus W
    # times the sum of its two readings (each layer's unit pieces' and unit whole-prompt readings)
    both = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "both"), layers="1-2",
                       pooling="mean", best=True, alone_weight=0.5, alone_pool="both", language_words=300, min_count=3,
                       progress=False)  # fmt: skip
    assert both.manifest["best"] == name.replace(".alone0.5.", ".alone0.5.both.")
    again_name, again = derive(both.out, Recipe(layers=span, pooling="mean", alone=0.5, words=300, pool="both"))
    assert again_name == both.manifest["best"]
    np.testing.assert_allclose(again.vectors, both["best"].vectors, atol=1e-6)
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    for word in added[:2]:
        pieces = _read_alone(tiny_bert_dir, word, layers)
        whole = _read_alone(tiny_bert_dir, word, layers, whole=True)
        own = unit(np.mean([unit(p) for p in pieces], axis=0))
        read = unit(np.mean([unit(unit(p) + unit(q)) for p, q in zip(pieces, whole)], axis=0))
        np.testing.assert_allclose(both["best"][word], own + 0.5 * read, atol=1e-5)
    with pytest.raises(ConfigError, match="add --best"):
        distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], language_words=10)


def test_a_word_read_alone_is_pooled_from_its_pieces_its_last_piece_or_its_whole_prompt(tiny_bert_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from distill.config import AlonePool, Template
    from distill.encoders import load_encoder
    from distill.encoding.alone import encode_alone, summed

    encoder = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (1,))
    template = Template.parse("concept")
    last, mean, prompt = (
        encode_alone(encoder, ["king", "kingqqq"], (1,), template=template, pool=pool)[0, 1]
        for pool in (AlonePool.LAST, AlonePool.PIECES, AlonePool.PROMPT)
    )
    both = summed(encode_alone(encoder, ["king", "kingqqq"], (1,), template=template, pool=AlonePool.BOTH))[0, 1]
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir)
    encoded = tokenizer("the concept of kingqqq", return_tensors="pt")
    pieces = len(tokenizer.tokenize("kingqqq"))
    with torch.no_grad():
        states = model(**encoded, output_hidden_states=True).hidden_states[1][0]
    assert pieces > 1  # [CLS] the concept of king ##q ... [SEP]: the word's pieces end just before [SEP]
    np.testing.assert_allclose(last, states[-2].numpy(), atol=1e-5)
    np.testing.assert_allclose(mean, states[-1 - pieces : -1].mean(dim=0).numpy(), atol=1e-5)
    np.testing.assert_allclose(prompt, states[1:-1].mean(dim=0).numpy(), atol=1e-5)  # [CLS] and [SEP] left out
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    np.testing.assert_allclose(both, unit(mean) + unit(prompt), atol=1e-5)  # one pass, the word's two rows


def test_derive_takes_alone_weight_as_run_does_and_its_old_name_still(pieces_run, tmp_path):
    import shutil
    import subprocess
    import sys

    texts = []
    for option in ("--alone-weight", "--alone"):
        run = shutil.copytree(pieces_run, tmp_path / option)
        done = subprocess.run(
            [sys.executable, "-m", "distill", "derive", str(run), "--layers", "1", "--pooling", "mean", option, "0.5"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        texts.append((Path(run) / "layer1.mean.alone0.5.txt").read_text())
    assert texts[0] == texts[1] and len(texts[0].splitlines()) > 10


def test_derive_reads_words_alone_in_another_prompt_and_names_the_set_after_it(pieces_run, tiny_bert_dir, tmp_path):
    import shutil
    import subprocess
    import sys

    from distill.derived.recipe import Recipe, derive
    from distill.serve.alone import AloneFallback

    run = Path(shutil.copytree(pieces_run, tmp_path / "run"))  # its own prompt: an encoder's default, word
    done = subprocess.run(
        [sys.executable, "-m", "distill", "derive", str(run), "--layers", "1", "--pooling", "mean", "--alone-weight",
         "0.5", "--alone-template", CAUSAL_TEMPLATE, "--no-progress"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    name = f"layer1.mean.alone0.5.{CAUSAL_TEMPLATE}"
    record = json.loads((run / "manifest.json").read_text())["derived"][name]
    assert record["template"] == CAUSAL_TEMPLATE
    kv, plain = distill.load(run, vector_set=name), distill.load(run, layer=1, pooling="mean")
    for word in kv.index_to_key[:3]:
        (alone,) = _read_alone(tiny_bert_dir, word, [1], prompt=TEMPLATES[CAUSAL_TEMPLATE])
        expected = plain[word] / np.linalg.norm(plain[word]) + 0.5 * alone / np.linalg.norm(alone)
        np.testing.assert_allclose(kv[word], expected, atol=1e-5)
    # its fallback reads a word the set lacks in that prompt too
    (unknown,) = _read_alone(tiny_bert_dir, "kingqqq", [1], prompt=TEMPLATES[CAUSAL_TEMPLATE])
    read = AloneFallback.open(run, name).vector("kingqqq")  # a derived set's layers combine as unit vectors
    np.testing.assert_allclose(read / np.linalg.norm(read), unknown / np.linalg.norm(unknown), atol=1e-5)
    # the run's own prompt, named or not, is the set the run would make; free text is named by its digest
    own, _ = derive(run, Recipe(layers="1", pooling="mean", alone=0.5, template=ENCODER_TEMPLATE))
    assert own == "layer1.mean.alone0.5"
    free, _ = distill.derive(run, "1", "mean", alone=0.5, alone_template="say {word}", progress=False)
    assert re.fullmatch(r"layer1\.mean\.alone0\.5\.prompt[0-9a-f]{8}", free)
    with pytest.raises(ConfigError, match="needs words read alone"):
        Recipe(layers="1", template="word")


def test_alone_pool_both_adds_the_whole_prompt_s_reading_and_a_missing_word_keeps_its_pieces(pieces_run, tiny_bert_dir):
    from distill.config import RunConfig
    from distill.derived import Recipe
    from distill.serve.alone import AloneFallback

    name, kv = distill.derive(pieces_run, "1", "mean", alone=0.5, alone_pool="both", progress=False)
    assert name == "layer1.mean.alone0.5.both"
    assert json.loads((pieces_run / "manifest.json").read_text())["derived"][name]["pool"] == "both"
    plain = distill.load(pieces_run, layer=1, pooling="mean")

    def unit(v):
        return v / np.linalg.norm(v)

    def both(word):
        (pieces,) = _read_alone(tiny_bert_dir, word, [1])
        (whole,) = _read_alone(tiny_bert_dir, word, [1], whole=True)
        return unit(pieces), unit(unit(pieces) + unit(whole))

    for word in kv.index_to_key[:3]:  # a corpus word: its vector plus W times the sum of the two readings
        np.testing.assert_allclose(kv[word], unit(plain[word]) + 0.5 * both(word)[1], atol=1e-5)
    own, added = both("kingqqq")  # a word the set lacks: its pieces' reading plus the same
    read = AloneFallback.open(pieces_run, name).vector("kingqqq")
    np.testing.assert_allclose(unit(read), unit(own + 0.5 * added), atol=1e-5)
    with pytest.raises(ConfigError, match="give a weight above 0"):
        RunConfig(best=True, alone_pool="both")
    with pytest.raises(ConfigError, match="pieces or both"):
        Recipe(layers="1", alone=0.5, pool="last")


def test_a_card_says_where_the_set_s_words_came_from():
    """A card said "22,504 words" for a 7,637-word corpus: most were the teacher's own words, read alone."""
    from distill.serve.card import _vocabulary

    manifest = {
        "vocabulary": {"size": 58_506, "lowercase": True, "from_model_vocabulary": 5_189},
        "derived": {"best": {"words_added": 241_787}, "best.tuned": {"tuned_from": "best"}, "plain": {}},
    }
    both = "300,293 words (lowercased): 53,317 from the corpus, 5,189 of the teacher's whole words and 241,787 of"
    assert both in _vocabulary(manifest, "best") and both in _vocabulary(manifest, "best.tuned")
    assert _vocabulary(manifest, "plain").endswith(
        ": 53,317 from the corpus, 5,189 of the teacher's whole words, read alone"
    )
    manifest["vocabulary"] = {"size": 8_291, "lowercase": False}  # a manifest of a run before the field
    assert _vocabulary(manifest, "plain") == "- vocabulary: 8,291 words (cased)"


def test_a_card_names_the_teacher_by_its_hub_id_and_never_by_a_path():
    from distill.serve.card import teacher_hub_id

    def hub(model: str) -> str | None:
        return teacher_hub_id({"config": {"model": model}, "model": {"name": model}})

    assert hub("minilm") == hub("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert hub("mpnet") == "sentence-transformers/all-mpnet-base-v2" and hub("bert") == "bert-base-cased"
    assert hub("/models/tiny") is None and hub("./tiny") is None and hub("a/b/c") is None


def test_a_card_reads_the_scores_of_the_run_s_report_and_leaves_out_those_of_no_pair(tmp_path):
    from distill.files import write_json
    from distill.serve.card import run_word_scores

    def score(benchmark: str, value: float) -> dict[str, object]:
        return {"benchmark": benchmark, "oov": "standard", "score": value, "n_covered": 0, "n_total": 999}

    rows = [{"meta": {"set": "layer1.pc"}, "scores": [score("simlex999", float("nan")), score("men", 0.5)]}]
    write_json({"rows": rows}, tmp_path / "report.json")  # standard JSON: the score of no pair is null
    assert "NaN" not in (tmp_path / "report.json").read_text()
    assert [(s.dataset, s.value) for s in run_word_scores(tmp_path, "layer1.pc")] == [("men", 50.0)]


@pytest.mark.integration
def test_a_card_takes_the_teacher_s_licence_from_its_own_card():
    from distill.paths import models_dir
    from distill.serve.card import teacher_license

    if not (models_dir() / "all-MiniLM-L6-v2" / "README.md").is_file():
        pytest.skip("needs ../shared/models")
    assert teacher_license({"model": {"source": str(models_dir() / "all-MiniLM-L6-v2")}}) == "apache-2.0"


def test_piece_files_keep_only_the_pieces_seen_and_read_back_dense(tmp_path, rng):
    from distill.serve.pieces import read_pieces, write_pieces

    counts = np.array([0, 3, 0, 1, 0])
    vectors = rng.normal(size=(5, 4)).astype(np.float32) * (counts > 0)[:, None]
    path = write_pieces(tmp_path / "p.npz", vectors, counts)
    with np.load(path) as stored:
        assert stored["ids"].tolist() == [1, 3] and stored["vectors"].shape == (2, 4) and int(stored["n_pieces"]) == 5
    back, back_counts, scaled = read_pieces(path, 5)
    np.testing.assert_array_equal(back, vectors)
    assert back_counts.tolist() == counts.tolist() and not scaled
    np.savez(tmp_path / "dense.npz", vectors=vectors, counts=counts)  # as runs before sparse files wrote them
    np.testing.assert_array_equal(read_pieces(tmp_path / "dense.npz", 5)[0], vectors)
    np.savez(tmp_path / "bad.npz", ids=np.array([1, 9]), vectors=vectors[:2], counts=counts[:2], n_pieces=np.array(5))
    with pytest.raises(ConfigError, match="piece ids that do not match"):
        read_pieces(tmp_path / "bad.npz", 5)
    with pytest.raises(ConfigError, match="a vector for each piece"):
        read_pieces(path, 6)  # a tokenizer with more pieces than the file


def test_an_export_has_rows_for_the_pieces_seen_and_letters_read_alone_only(wordpiece_tokenizer, rng):
    from distill.serve.formats import LAST_RESORT, letters, wordpiece_fallback
    from distill.serve.pieces import PieceVectors

    vocab = wordpiece_tokenizer.get_vocab()
    longer = [t for t in vocab if len(t.removeprefix("##")) > 1 and t.removeprefix("##").isalpha()]
    letter_ids = sorted(letters(wordpiece_tokenizer))
    seen, read, unread = longer[:3], letter_ids[:4], letter_ids[4:]
    counts, vectors = np.zeros(len(wordpiece_tokenizer), int), np.zeros((len(wordpiece_tokenizer), 4), np.float32)
    for token in seen:
        counts[vocab[token]], vectors[vocab[token]] = 2, rng.normal(size=4)
    vectors[read] = rng.normal(size=(len(read), 4))  # never seen, read alone: count 0, a row
    pieces = PieceVectors(wordpiece_tokenizer, vectors, counts, lowercase=True)
    words = np.full((1, 4), 2.0, np.float32)  # norm 4
    tokenizer, rows = wordpiece_fallback(["zzword"], words, pieces)
    kept = tokenizer.get_vocab()
    by_id = {i: t for t, i in vocab.items()}
    assert set(seen) | {by_id[i] for i in read} <= set(kept) and not set(longer[3:]) & set(kept)
    assert not {by_id[i] for i in unread} & set(kept)
    assert len(rows) == len(kept) == 1 + len(seen) + len(read) + 1  # the word, pieces, [UNK]
    norms = np.linalg.norm(rows, axis=1)
    assert np.all(norms[:-1] > 0) and norms[-1] == 0  # no zero row but [UNK]'s
    np.testing.assert_allclose([norms[kept[t]] for t in seen], 4.0, rtol=1e-6)
    np.testing.assert_allclose([norms[kept[by_id[i]]] for i in read], 4.0 * LAST_RESORT, rtol=1e-6)


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_a_word_a_tuned_table_held_keeps_its_row_when_an_export_leaves_it_out(kind, request, rng):
    """A tuned set's piece file has no row for a piece whose text was a word of the table: an export that leaves
    the word out (``--top-words``) gives that piece the word's own row, at its own norm."""
    from distill.serve.formats import bpe_fallback, wordpiece_fallback
    from distill.serve.pieces import PieceVectors

    tokenizer = request.getfixturevalue(f"{kind}_tokenizer")
    vocab, mark = tokenizer.get_vocab(), "Ġ" if kind == "bpe" else ""
    whole = [t for t in vocab if t.startswith(mark) and len(t) > 3 + len(mark) and t[len(mark) :].isalpha()][:2]
    words = [t[len(mark) :] for t in whole]  # words that are one piece
    counts, vectors = np.ones(len(vocab), int), rng.normal(size=(len(vocab), 4)).astype(np.float32)
    counts[[vocab[t] for t in whole]], vectors[[vocab[t] for t in whole]] = 0, 0.0  # no row, as when tuned
    own = rng.normal(size=(2, 4)).astype(np.float32) * [[3.0], [0.5]]
    for scaled in (True, False):
        pieces = PieceVectors(tokenizer, vectors, counts, lowercase=False, scaled=scaled).with_words(words, own)
        kept = np.ones((1, 4), np.float32)
        made = wordpiece_fallback(["zzword"], kept, pieces) or bpe_fallback(["zzword"], kept, pieces, False)
        exported, rows = made
        for word, row in zip(words, own, strict=True):
            (i,) = exported.encode(word, add_special_tokens=False).ids
            np.testing.assert_allclose(rows[i], row, rtol=1e-6)  # its own vector, not rescaled
        assert exported.encode("zzword", add_special_tokens=False).ids == [0]  # a word kept is still its own row


def test_words_left_out_of_an_export_keep_their_vectors_where_they_are_one_piece(pieces_run, tmp_path):
    from model2vec import StaticModel

    from distill.serve.pieces import PieceVectors

    kv = distill.load(pieces_run, vector_set="layer1.mean")
    ((path, _),) = export_run(pieces_run, pooling="mean", formats=[Format.MODEL2VEC], out=tmp_path / "m",
                              weighting="none", top_words=5)  # fmt: skip
    left = kv.index_to_key[5:]
    one = [w for w, ids in zip(left, PieceVectors.open(pieces_run, 1).pieces_of(left), strict=True) if len(ids) == 1]
    assert len(one) > 10
    np.testing.assert_allclose(StaticModel.from_pretrained(str(path)).encode(one), kv[one], rtol=1e-4, atol=1e-5)


def test_an_export_gives_a_word_of_letters_never_seen_their_reading_alone(pieces_run, tiny_bert_dir, tmp_path):
    from model2vec import StaticModel

    from distill.serve.formats import letters
    from distill.serve.pieces import PieceVectors

    pieces = PieceVectors.open(pieces_run, 1)
    unseen = [letter for i, letter in letters(pieces.tokenizer).items() if pieces.counts[i] == 0]
    word = next(w for w in ("qz", "zq", "xq", "qx") if set(w) <= set(unseen))  # two letters the corpus lacks
    ((path, _),) = export_run(pieces_run, pooling="mean", formats=[Format.MODEL2VEC], out=tmp_path / "m",
                              weighting="none")  # fmt: skip
    model = StaticModel.from_pretrained(str(path))
    table = np.asarray(model.embedding)
    assert np.all(np.any(table[:-1], axis=1)) and not np.any(table[-1])  # no zero row but [UNK]'s
    (vector,) = model.encode([word])
    first, second = (_read_alone(tiny_bert_dir, letter, [1])[0] for letter in word)
    expected = first / np.linalg.norm(first) + second / np.linalg.norm(second)  # each letter read alone
    assert vector @ expected / np.linalg.norm(vector) / np.linalg.norm(expected) == pytest.approx(1.0, abs=1e-5)


def test_a_reduced_export_keeps_the_sentence_weights_it_bakes_in(pieces_run, tmp_path):
    from distill.rundir import RunDir
    from distill.serve.weighting import sif_weights

    ((path, _),) = export_run(pieces_run, pooling="mean", formats=[Format.NPY], out=tmp_path / "d4", dims=4)
    small = read_npy(path)
    counts = RunDir(pieces_run).counts(small.index_to_key)
    # reduced first, then unit and SIF-weighted: centring weighted vectors would have undone the weights
    np.testing.assert_allclose(np.linalg.norm(small.vectors, axis=1), sif_weights(counts), rtol=1e-4)


@pytest.mark.parametrize("smaller", [{"dtype": "int8"}, {"dims": 4}], ids=["int8", "dims"])
def test_a_smaller_model2vec_export_keeps_the_piece_fallback(pieces_run, tmp_path, smaller):
    from model2vec import StaticModel

    ((path, _),) = export_run(pieces_run, pooling="mean", formats=[Format.MODEL2VEC], out=tmp_path / "m",
                              weighting="none", **smaller)  # fmt: skip
    oov, known = StaticModel.from_pretrained(str(path)).encode(["kingqqq", "king"])
    assert np.any(oov) and oov @ known / np.linalg.norm(oov) / np.linalg.norm(known) == pytest.approx(1.0, abs=1e-5)
    said = {"dtype": "- stored: int8, one scale for the table\n", "dims": "- stored: 4 dimensions (PCA of the"}
    assert said[next(iter(smaller))] in (path / "README.md").read_text()  # the card says what was made smaller


def test_a_dtype_a_format_cannot_store_is_said(pieces_run, tmp_path, caplog):
    """A sentence-transformers folder "in int8" is float32 of the rounded vectors: as large, and the user is told."""
    with caplog.at_level("WARNING", logger="distill.serve.formats"):
        export_run(pieces_run, pooling="mean", formats=[Format.KV, Format.NPY], out=tmp_path / "a", dtype="float16")
        assert not caplog.records  # both store float16
        written = export_run(pieces_run, pooling="mean", formats=[Format.WORD2VEC, Format.NPY], out=tmp_path / "b",
                             dtype="int8")  # fmt: skip
    said = [r.getMessage() for r in caplog.records]
    assert said == ["word2vec stores float32: the int8 vectors are written rounded, at float32's size (model2vec, npy "
                    "store int8)"]  # fmt: skip
    assert len(written) == 3  # .txt, .bin and the npy folder: written all the same


def test_an_uncentred_reduction_is_the_top_right_singular_vectors(rng):
    x = (rng.standard_normal((200, 6)) + 3.0).astype(np.float32)  # a large common direction
    pca = fit_pca(x, 2, center=False)
    _, _, vt = np.linalg.svd(x.astype(np.float64), full_matrices=False)
    for got, want in zip(pca.components, vt[:2]):
        assert abs(float(got @ want)) == pytest.approx(1.0, abs=1e-5)  # the same direction, up to sign
    np.testing.assert_allclose(pca.transform(x), x @ pca.components.T, rtol=1e-5)  # nothing subtracted
    assert fit_pca(x, 2).mean.any() and 0.9 < pca.explained_variance_ratio <= 1.0


def test_letters_read_alone_come_at_the_norm_of_the_pieces_that_have_a_vector(pieces_run, tiny_bert_dir):
    from dataclasses import replace

    from distill.serve.alone import read_unseen_letters
    from distill.serve.formats import letters
    from distill.serve.pieces import PieceVectors

    pieces = PieceVectors.open(pieces_run, 1)
    seen = np.flatnonzero(pieces.counts > 0)
    vectors = pieces.vectors.copy()
    vectors[seen[: len(seen) * 2 // 3]] = 0  # as in a tuned set, where a piece that is also a word has no row
    filled = read_unseen_letters(pieces_run, "layer1.mean", replace(pieces, vectors=vectors, scaled=True))
    unseen = [i for i in letters(pieces.tokenizer) if pieces.counts[i] == 0]
    median = np.median(np.linalg.norm(vectors[seen[len(seen) * 2 // 3 :]], axis=1))
    np.testing.assert_allclose(np.linalg.norm(filled.vectors[unseen], axis=1), median, rtol=1e-5)
    letter = letters(pieces.tokenizer)[unseen[0]]
    (alone,) = _read_alone(tiny_bert_dir, letter, [1])
    assert filled.vectors[unseen[0]] @ alone / median / np.linalg.norm(alone) == pytest.approx(1.0, abs=1e-5)


def test_a_bpe_piece_never_seen_gets_a_row_from_the_pieces_it_is_merged_from_or_into(bpe_tokenizer, rng):
    from distill.serve.formats import LAST_RESORT, UNK, bpe_fallback
    from distill.serve.pieces import PieceVectors

    vocab = bpe_tokenizer.get_vocab()
    merges = json.loads(bpe_tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    a, b = merges[0]  # two letters, merged first: "h" + "e"
    space = "Ġ"  # the alphabet's space: read alone it is nothing, and no piece of it is seen here
    counts, vectors = np.zeros(len(vocab), int), np.zeros((len(vocab), 4), np.float32)
    for token in (a, b, space + "the", ",", "7"):
        counts[vocab[token]], vectors[vocab[token]] = 5, rng.normal(size=4)
    pieces = PieceVectors(bpe_tokenizer, vectors, counts)
    tokenizer, rows = bpe_fallback(["zzword"], np.full((1, 4), 2.0, np.float32), pieces, lowercase=False)
    kept = tokenizer.get_vocab()
    assert a + b in kept and kept[UNK] == len(rows) - 1 and len(kept) == len(rows)
    assert "," not in kept and "7" not in kept  # seen, but punctuation and digits add nothing, as in WordPiece
    norms = np.linalg.norm(rows, axis=1)
    assert np.all(norms[:-1] > 0) and norms[-1] == 0  # no zero row but [UNK]'s
    unit = {t: vectors[vocab[t]] / np.linalg.norm(vectors[vocab[t]]) for t in (a, b, space + "the")}
    np.testing.assert_allclose(rows[kept[a + b]], 4.0 * (unit[a] + unit[b]) / 2, rtol=1e-5)  # merged from
    assert space in kept and norms[kept[space]] <= 4.0 * LAST_RESORT + 1e-6  # merged into only: a last resort
    assert tokenizer.encode("the").tokens == [space + "the"]  # the first word, read as every other
    parts = {x + y: (x, y) for x, y in merges}

    def made_of(token: str) -> set[str]:
        return {token}.union(*(made_of(part) for part in parts.get(token, ())))

    alphabet = {t for t in vocab if t not in parts}
    kept_pieces = set(kept) - {space + "zzword", UNK}
    assert made_of(space + "the") <= kept_pieces <= alphabet | made_of(space + "the")  # no piece leading nowhere


@pytest.mark.parametrize("model", ["gpt2", "llama"])
def test_a_bpe_models_export_reads_known_words_whole_and_others_by_the_models_pieces(model, request, tmp_path):
    from model2vec import StaticModel

    from distill.serve.formats import letters
    from distill.serve.pieces import PieceVectors

    run = tmp_path / "run"
    model_dir = request.getfixturevalue(f"tiny_{model}_dir")
    distill.run(model=str(model_dir), out=str(run), corpus=[str(TINY_CORPUS)], layers="1", pooling="mean",
                min_count=1, max_occurrences=10_000, pieces=True, progress=False)  # fmt: skip
    ((path, _),) = export_run(run, pooling="mean", formats=[Format.MODEL2VEC], out=tmp_path / "m", weighting="none")
    exported = StaticModel.from_pretrained(str(path))
    table = np.asarray(exported.embedding)
    assert np.all(np.any(table[:-1], axis=1)) and not np.any(table[-1])  # no zero row but [UNK]'s
    kv = distill.load(run, layer=1, pooling="mean")
    pieces = PieceVectors.open(run, 1)
    assert "q" in [letter for i, letter in letters(pieces.tokenizer).items() if pieces.counts[i] == 0]
    king, first, later, oov = exported.encode(["king", "king king", "the king", "kingqqq"])

    def cosine(u: np.ndarray, v: np.ndarray) -> float:
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    assert cosine(king, kv["king"]) == pytest.approx(1.0, abs=1e-6) and cosine(first, king) == pytest.approx(1.0)
    assert exported.tokenizer.encode("the king").ids == [kv.key_to_index["the"], kv.key_to_index["king"]]
    assert cosine(later, kv["the"] + kv["king"]) == pytest.approx(1.0, abs=1e-6)
    assert exported.tokenizer.encode("kingqqq").tokens[-3:] == ["q"] * 3  # the model's pieces: q read alone
    assert cosine(oov, king) == pytest.approx(1.0, abs=1e-4)  # letters read alone barely turn a seen piece


def test_a_kv_export_keeps_no_array_of_an_earlier_larger_one(tmp_path):
    """gensim saves a large table's array beside the pickle; a smaller export of the same name has none, and an
    earlier one's left there would be counted in its size and shipped with it."""
    from distill.config import DType
    from distill.serve.formats import kv_side_file, size_on_disk, write_kv

    rng = np.random.default_rng(0)
    path = tmp_path / "set.kv"
    big = rng.standard_normal((41_000, 256)).astype(np.float32)  # past gensim's 10 Mi values for a separate file
    write_kv([f"w{i}" for i in range(len(big))], quantize(big, DType.FLOAT32), None, path)
    assert kv_side_file(path).is_file()
    small = rng.standard_normal((3, 4)).astype(np.float32)
    write_kv(["a", "b", "c"], quantize(small, DType.FLOAT32), None, path)
    assert not kv_side_file(path).exists() and size_on_disk(path) == path.stat().st_size
    np.testing.assert_array_equal(KeyedVectors.load(str(path)).vectors, small)
