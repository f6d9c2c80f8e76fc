import numpy as np
import torch

from distill.serve.pieces import PieceSums


def _batch(rng, n_pieces=7, dim=3, layers=2):
    ids = torch.from_numpy(rng.integers(0, n_pieces, (2, 5)))
    content = torch.from_numpy(rng.random((2, 5)) < 0.7)
    hidden = [torch.from_numpy(rng.standard_normal((2, 5, dim)).astype(np.float32)) for _ in range(layers + 1)]
    return hidden, ids, content


def test_piece_means_match_a_hand_computation_and_survive_a_resume():
    rng = np.random.default_rng(0)
    batches = [_batch(rng) for _ in range(4)]
    whole = PieceSums((0, 2), 7, 3)
    assert whole.state()["counts"].tolist() == [0] * 7  # a checkpoint before the first batch: zeros
    assert whole.state()["sums2"].shape == (7, 3)
    for batch in batches:
        whole.observe(*batch)
    first, resumed = PieceSums((0, 2), 7, 3), PieceSums((0, 2), 7, 3)
    for batch in batches[:2]:
        first.observe(*batch)
    resumed.load_state(first.state())
    for batch in batches[2:]:
        resumed.observe(*batch)
    for layer in (0, 2):
        expected = np.zeros((7, 3))
        counts = np.zeros(7)
        for hidden, ids, content in batches:
            for i, keep in zip(ids.flatten().tolist(), content.flatten().tolist()):
                counts[i] += keep
            for row, i, keep in zip(hidden[layer].reshape(-1, 3).numpy(), ids.flatten().tolist(),
                                    content.flatten().tolist()):  # fmt: skip
                expected[i] += row * keep
        expected /= np.maximum(counts, 1)[:, None]
        np.testing.assert_allclose(whole.vectors(layer), expected, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(resumed.vectors(layer), whole.vectors(layer))


def test_each_layers_file_is_written_on_its_own_thread_with_the_same_vectors(tmp_path, monkeypatch):
    from distill.serve import pieces

    rng = np.random.default_rng(1)
    sums = PieceSums((0, 1, 2), 7, 3)
    sums.observe(*_batch(rng))
    monkeypatch.setattr(pieces, "writer_threads", lambda: 3)  # a many-core host's writers, on any machine
    paths = sums.write(tmp_path)
    assert [p.name for p in paths] == ["layer0.pieces.npz", "layer1.pieces.npz", "layer2.pieces.npz"]
    for layer, path in zip((0, 1, 2), paths):
        vectors, counts, _ = pieces.read_pieces(path, 7)
        np.testing.assert_array_equal(vectors, sums.vectors(layer))
        np.testing.assert_array_equal(counts, sums.counts.numpy())
