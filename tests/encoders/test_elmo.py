"""ELMo on random weights written in the official hdf5 layout (real weights cannot be downloaded here)."""

import json

import numpy as np
import pytest
import torch

import distill
from distill.encoders.alignment import pad_windows
from distill.encoders.elmo import Elmo, ProjectedLstm, char_ids, elmo_config, load_elmo
from distill.errors import ConfigError

from ..conftest import TINY_CORPUS

pytest.importorskip("h5py")

TINY = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 8,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 16,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "relu",
        "filters": [[1, 4], [2, 4], [3, 8]],
        "n_highway": 2,
        "embedding": {"dim": 4},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}
OFFICIAL = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "relu",
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "n_highway": 2,
        "embedding": {"dim": 16},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}


def official_shapes(options: dict) -> dict[str, tuple[int, ...]]:
    """Dataset name -> shape in the official weights.hdf5 (TensorFlow checkpoint layout)."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    n_filters = sum(n for _, n in cnn["filters"])
    proj, cell = lstm["projection_dim"], lstm["dim"]
    shapes = {"char_embed": (cnn["n_characters"] - 1, cnn["embedding"]["dim"])}
    for i, (w, n) in enumerate(cnn["filters"]):
        shapes[f"CNN/W_cnn_{i}"] = (1, w, cnn["embedding"]["dim"], n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for k in range(cnn["n_highway"]):
        for name in ("W_transform", "W_carry"):
            shapes[f"CNN_high_{k}/{name}"] = (n_filters, n_filters)
        for name in ("b_transform", "b_carry"):
            shapes[f"CNN_high_{k}/{name}"] = (n_filters,)
    shapes["CNN_proj/W_proj"], shapes["CNN_proj/b_proj"] = (n_filters, proj), (proj,)
    for d in range(2):
        for k in range(lstm["n_layers"]):
            base = f"RNN_{d}/RNN/MultiRNNCell/Cell{k}/LSTMCell"
            shapes[f"{base}/W_0"] = (proj + proj, 4 * cell)
            shapes[f"{base}/B"] = (4 * cell,)
            shapes[f"{base}/W_P_0"] = (cell, proj)
    return shapes


def write_elmo(folder, options, seed=0):
    import h5py

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "options.json").write_text(json.dumps(options))
    with h5py.File(folder / "weights.hdf5", "w") as f:
        for name, shape in official_shapes(options).items():
            f.create_dataset(name, data=(rng.standard_normal(shape) * 0.5).astype(np.float32))
    return folder


@pytest.fixture(scope="module")
def elmo_dir(tmp_path_factory):
    return write_elmo(tmp_path_factory.mktemp("elmo"), TINY)


def test_module_parameters_match_the_official_weight_shapes():
    model = Elmo(OFFICIAL)  # the paper's 2x4096_512_2048cnn_2xhighway
    shapes = official_shapes(OFFICIAL)
    assert tuple(model.chars.char_embedding.shape) == (shapes["char_embed"][0] + 1, 16)  # + padding row
    assert model.chars.projection.weight.shape == (512, 2048)
    lstm = model.forward_layers[1]
    assert lstm.input_linearity.weight.shape == (4 * 4096, 512) and lstm.state_projection.weight.shape == (512, 4096)
    assert sum(p.numel() for p in model.parameters()) == sum(int(np.prod(s)) for s in shapes.values()) + 16


def test_lstm_step_follows_tensorflow_gate_order(elmo_dir):
    import h5py

    model = load_elmo("elmo", str(elmo_dir), torch.device("cpu")).model
    lstm: ProjectedLstm = model.forward_layers[0]
    with h5py.File(elmo_dir / "weights.hdf5") as f:
        cell = f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell"]
        w, b, wp = cell["W_0"][...], cell["B"][...], cell["W_P_0"][...]
    x = np.random.default_rng(1).standard_normal((1, 8)).astype(np.float32)
    # TensorFlow's LSTMCell, first step from zero state: gates i, j, f, o; forget bias 1; clip 3
    z = np.concatenate([x, np.zeros((1, 8), np.float32)], axis=1) @ w + b
    i, j, f_, o = np.split(z, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c = np.clip(sig(i) * np.tanh(j) + sig(f_ + 1.0) * 0, -3, 3)
    h = np.clip((sig(o) * np.tanh(c)) @ wp, -3, 3)
    ours = lstm(torch.from_numpy(x)[None], torch.tensor([1]), backward=False)[0, 0].detach().numpy()
    np.testing.assert_allclose(ours, h[0], atol=1e-5)


def test_layers_see_the_context_they_should(elmo_dir):
    enc = load_elmo("elmo", str(elmo_dir), torch.device("cpu"))
    a, b = enc.tokenize(["the king sat down .", "the king ran far away"], stride=2)
    h0, h1, h2 = enc.forward_padded(*pad_windows([a, b]))
    assert len(a.ids) == 5 and len(b.ids) == 5
    np.testing.assert_allclose(h0[0, 1], h0[1, 1], atol=1e-6)  # layer 0: context-free
    half = h1.shape[-1] // 2
    np.testing.assert_allclose(h1[0, 1, :half], h1[1, 1, :half], atol=1e-6)  # forward: same left context
    assert not torch.allclose(h1[0, 1, half:], h1[1, 1, half:])  # backward: different right context
    assert not torch.allclose(h2[0, 1], h2[1, 1])
    alone, *_ = enc.forward_padded(*pad_windows([a]))  # padding in a batch changes nothing
    single = enc.forward_padded(*pad_windows([enc.tokenize(["the king"], stride=2)[0]]))
    assert single[1].shape == (1, 2, 16)
    np.testing.assert_allclose(alone[0], h0[0], atol=1e-6)


def test_char_ids_as_allennlp():
    ids = char_ids("ab")
    assert ids[:4] == [259, 98, 99, 260] and ids[4:] == [261] * 46 and len(ids) == 50
    assert char_ids("<S>")[:3] == [259, 257, 260]


def test_distillation_runs_on_elmo_layers_0_to_2(elmo_dir, tmp_path):
    assert elmo_config(elmo_dir).num_hidden_layers == 2
    result = distill.run(
        model=str(elmo_dir),
        corpus=[str(TINY_CORPUS)],
        out=str(tmp_path),
        layers="all",
        min_count=3,
        max_occurrences=5,
        progress=False,
    )
    assert result.manifest["layers"] == [0, 1, 2]
    assert result[2].vector_size == 16 and "king" in result[0].key_to_index
    assert result.manifest["occurrences"]["not_aligned"] == 0


def test_pieces_on_elmo_is_refused_before_anything_is_written(elmo_dir, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="ELMo reads characters.*drop --pieces"):
        distill.run(model=str(elmo_dir), corpus=[str(TINY_CORPUS)], out=str(out), pieces=True, progress=False)
    assert not out.exists()


@pytest.mark.parametrize(
    "options, why",
    [
        ("{not json", "cannot be read"),
        ("[]", "TypeError"),
        (json.dumps({**TINY, "lstm": {**TINY["lstm"], "n_layers": -1}}), "not a positive whole number"),
        (json.dumps({k: v for k, v in TINY.items() if k != "char_cnn"}), "KeyError: 'char_cnn'"),
    ],
)
def test_damaged_options_are_one_clear_error_before_anything_is_written(elmo_dir, tmp_path, options, why):
    folder = tmp_path / "elmo"
    folder.mkdir()
    (folder / "weights.hdf5").write_bytes((elmo_dir / "weights.hdf5").read_bytes())
    (folder / "options.json").write_text(options)
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=f"options.json.*{why}.*damaged"):
        distill.run(model=str(folder), corpus=[str(TINY_CORPUS)], out=str(out), pieces=False, progress=False)
    assert not out.exists()
