from types import SimpleNamespace

import numpy as np
import pytest

from distill.errors import ConfigError
from distill.names import SET_SUFFIXES, VOCAB
from distill.vectors.postprocess import combine, remove_top, unit, whiten


def test_remove_top_removes_the_dominant_directions(rng):
    basis = np.linalg.qr(rng.standard_normal((10, 10)))[0]
    x = (rng.standard_normal((500, 10)) * [20, 10, 1, 1, 1, 1, 1, 1, 1, 1]) @ basis.T + 5.0
    out = remove_top(x, 2)
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-4)  # centred
    _, _, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    np.testing.assert_allclose(out @ vt[:2].T, 0, atol=1e-3)  # nothing left along the top two directions
    np.testing.assert_allclose(out @ vt[2:].T, (x - x.mean(axis=0)) @ vt[2:].T, atol=1e-3)  # the rest untouched
    assert np.var(out @ basis[:, 0]) < 1e-3 * np.var(x @ basis[:, 0])  # the true top direction is gone
    with pytest.raises(ConfigError, match="--remove-top must be between 0 and 9"):
        remove_top(x, 10)


def test_whitening_gives_unit_covariance(rng):
    x = rng.standard_normal((400, 6)) @ rng.standard_normal((6, 6)) + 3.0
    cov = np.cov(whiten(x), rowvar=False)
    np.testing.assert_allclose(cov, np.eye(6), atol=1e-4)


def test_combine_means_unit_rows_or_concatenates(rng):
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)) * 100
    np.testing.assert_allclose(combine([a, b]), (unit(a) + unit(b)) / 2, atol=1e-6)
    assert combine([a, b], "concat").shape == (5, 8)
    with pytest.raises(ConfigError, match="use --combine concat"):
        combine([a, rng.standard_normal((5, 3))])


def test_derive_writes_a_set_equal_to_the_recipe(tiny_bert_dir, tmp_path):
    import json
    import subprocess
    import sys

    import distill
    from distill.derived.recipe import Recipe, derive

    from ..conftest import TINY_CORPUS

    distill.run(
        model=str(tiny_bert_dir),
        out=str(tmp_path),
        corpus=[str(TINY_CORPUS)],
        layers="0-2",
        pooling="pc,mean",
        min_count=2,
        max_occurrences=5,
        progress=False,
    )
    name, kv = derive(tmp_path, Recipe(layers="1-2", pooling="pc+mean", remove_top=1))
    assert name == "layers1-2.pc+mean.top1"
    parts = [unit(distill.load(tmp_path, layer=layer, pooling=p).vectors) for layer in (1, 2) for p in ("pc", "mean")]
    np.testing.assert_allclose(kv.vectors, remove_top(combine(parts), 1), atol=1e-6)
    from gensim.models import KeyedVectors

    again = KeyedVectors.load_word2vec_format(str(tmp_path / f"{name}.bin"), binary=True)
    np.testing.assert_allclose(again.vectors, kv.vectors)
    assert json.loads((tmp_path / "manifest.json").read_text())["derived"][name]["layers"] == [1, 2]
    bad = subprocess.run(
        [sys.executable, "-m", "distill", "derive", str(tmp_path), "--layers", "5"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "out of range" in bad.stderr


def test_best_layers_are_an_encoders_upper_third_and_a_causal_lms_lower_middle():
    from distill.config import best_layers

    assert best_layers(6).resolve(6) == (4, 5, 6) and best_layers(12).resolve(12) == tuple(range(8, 13))
    assert best_layers(2).resolve(2) == (2,) and best_layers(30).resolve(30) == tuple(range(20, 31))
    assert best_layers(30, causal=True).resolve(30) == (8, 9, 10)  # SmolLM2
    assert best_layers(12, causal=True).resolve(12) == (3, 4) and best_layers(24, causal=True).resolve(24) == (6, 7, 8)
    assert best_layers(2, causal=True).resolve(2) == (1,) and best_layers(1, causal=True).resolve(1) == (1,)


def test_causal_models_are_told_from_encoders_by_their_config():
    from transformers import BertConfig, GPT2Config, LlamaConfig, MPNetConfig

    from distill.encoders import is_causal

    assert is_causal(GPT2Config()) and is_causal(LlamaConfig())
    assert not is_causal(BertConfig()) and not is_causal(MPNetConfig())
    assert is_causal(BertConfig(is_decoder=True))  # a BERT made a decoder reads left to right
    assert not is_causal(SimpleNamespace(num_hidden_layers=2))  # ELMo's config: both ways


def test_run_with_best_writes_the_recommended_set(tiny_bert_dir, tmp_path):
    import distill

    from ..conftest import TINY_CORPUS

    result = distill.run(
        model=str(tiny_bert_dir),
        out=str(tmp_path),
        corpus=[str(TINY_CORPUS)],
        layers="1",
        min_count=2,
        max_occurrences=5,
        best=True,
        progress=False,
    )
    assert result.manifest["best"] == "layer2.mean.unit" and result.manifest["layers"] == [1, 2]
    # only what was asked for is written: layer 1's first PC and the recommended set, not the layer-2 mean
    # vectors it was derived from (beside the pieces of both layers, the recommended set's fallback)
    sets = [f"{s}{x}" for s in ("layer1.pc", "layer2.mean.unit") for x in SET_SUFFIXES]
    pieces = ["layer1.pieces.npz", "layer2.pieces.npz"]
    written = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("layer"))
    assert written == sorted(sets + pieces)
    assert sorted(result.vectors) == ["layer1.pc", "layer2.mean.unit"]
    assert result.manifest["files"] == [VOCAB, *sets, *pieces]
    mean = distill.run(model=str(tiny_bert_dir), out=str(tmp_path / "mean"), corpus=[str(TINY_CORPUS)], layers="2",
                       pooling="mean", min_count=2, max_occurrences=5, progress=False)  # fmt: skip
    np.testing.assert_allclose(result["layer2.mean.unit"].vectors, unit(mean[2, "mean"].vectors), atol=1e-6)


def test_best_layers_choose_the_recommended_sets_layers_and_are_encoded(tiny_bert_dir, tmp_path):
    import distill

    from ..conftest import TINY_CORPUS

    options = dict(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], min_count=2, max_occurrences=5,
                   progress=False)  # fmt: skip
    result = distill.run(out=str(tmp_path / "best"), layers="1", best=True, best_layers="0,2", **options)
    assert result.manifest["best"] == "layers0_2.mean" and result.manifest["layers"] == [0, 1, 2]
    assert result.manifest["config"]["best_layers"] == "0,2"
    mean = distill.run(out=str(tmp_path / "mean"), layers="0,2", pooling="mean", **options)
    expected = combine([mean[0, "mean"].vectors, mean[2, "mean"].vectors])
    np.testing.assert_allclose(result["layers0_2.mean"].vectors, expected, atol=1e-6)
    with pytest.raises(ConfigError, match="--best-layers chooses the recommended set's layers: add --best"):
        distill.run(out=str(tmp_path / "no"), best_layers="0,2", **options)
    with pytest.raises(ConfigError, match="layer 7 is out of range"):
        distill.run(out=str(tmp_path / "no"), best=True, best_layers="2,7", **options)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("weight", [-0.5, 101.0, float("nan")])
def test_a_weight_for_words_read_alone_out_of_range_is_refused(weight):
    from distill.derived.recipe import Recipe

    with pytest.raises(ConfigError, match="alone must be between 0 .off. and 100"):
        Recipe(alone=weight)
