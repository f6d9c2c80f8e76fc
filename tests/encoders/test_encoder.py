import numpy as np
import pytest
import torch

from distill.encoders import load_encoder
from distill.encoders.alignment import pad_windows
from distill.encoders.huggingface import attention_mask_4d, probe_mask_kind
from distill.encoding.batches import EncodeStats, prepare_chunk
from distill.encoding.local import encode_occurrences
from distill.encoding.store import OccurrenceStore
from distill.errors import ConfigError
from distill.occurrences import SentenceJob


def _full_hidden(model_dir, text):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    enc = tokenizer([text], return_offsets_mapping=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True)
    return hidden.hidden_states, enc["offset_mapping"][0].numpy()


@pytest.mark.parametrize("keep", [0, 1])
def test_cut_model_gives_the_full_models_hidden_states(tiny_model_dir, keep):
    text = "The king walked to the river bank"
    full, _ = _full_hidden(tiny_model_dir, text)
    loaded = load_encoder("tiny", str(tiny_model_dir), (keep,))
    enc = loaded.tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        cut = loaded.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True)
    assert len(cut.hidden_states) == max(keep, 1) + 1  # layers above the one asked for are not run
    torch.testing.assert_close(cut.hidden_states[keep], full[keep], atol=1e-5, rtol=1e-5)


def _encode(loaded, jobs, layers, n_rows, tmp_path, in_memory=False, **kwargs):
    folder = None if in_memory else tmp_path / "store"
    store = OccurrenceStore(folder, layers, n_rows, loaded.hidden_size)
    stats = encode_occurrences(loaded, jobs, layers, store, progress=False, **kwargs)
    return store, stats


def test_occurrence_is_the_mean_of_its_pieces_in_every_layer(tiny_model_dir, tmp_path):
    text = "Vivendi's unbelievable king walked"
    starts, ends = np.array([0, 11]), np.array([7, 23])  # "Vivendi", "unbelievable"
    full, offsets = _full_hidden(tiny_model_dir, text)
    loaded = load_encoder("tiny", str(tiny_model_dir), (0, 1, 2))
    store, stats = _encode(loaded, [SentenceJob(0, text, starts, ends, np.array([1, 0]))], (0, 1, 2), 2, tmp_path)
    assert stats.occurrences == 2 and stats.not_aligned == 0
    for row, (s, e) in zip([1, 0], zip(starts, ends)):
        pieces = (offsets[:, 0] < e) & (offsets[:, 1] > s) & (offsets[:, 1] > offsets[:, 0])
        assert pieces.sum() >= 1
        for layer in (0, 1, 2):
            expected = full[layer][0, torch.from_numpy(pieces)].mean(0).numpy()
            np.testing.assert_allclose(store.vectors(layer, np.array([row]))[0], expected, atol=1e-5)


def test_batching_and_padding_do_not_change_vectors(tiny_bert_dir, tmp_path):
    texts = ["a king", "the old king walked to the castle before dinner", "king"]
    jobs = []
    for i, text in enumerate(texts):
        s = text.index("king")
        jobs.append(SentenceJob(i, text, np.array([s]), np.array([s + 4]), np.array([i])))
    loaded = load_encoder("tiny", str(tiny_bert_dir), (2,))
    together, _ = _encode(loaded, jobs, (2,), 3, tmp_path / "a", batch_size=3, in_memory=True)
    alone, _ = _encode(loaded, jobs, (2,), 3, tmp_path / "b", batch_size=1, in_memory=False)
    assert isinstance(alone.matrices[2], np.memmap) and not isinstance(together.matrices[2], np.memmap)
    rows = np.arange(3)
    np.testing.assert_allclose(together.vectors(2, rows), alone.vectors(2, rows), atol=1e-5)


def test_prefetch_passes_items_and_errors():
    from distill.encoding.local import prefetch

    assert list(prefetch(iter(range(10)), depth=2)) == list(range(10))

    def broken():
        yield 1
        raise ConfigError("bad line 2")

    with pytest.raises(ConfigError, match="bad line 2"):
        list(prefetch(broken()))


def test_long_sentence_is_encoded_window_by_window(tiny_bert_dir, tmp_path):
    words = [f"w{i}" for i in range(80)]
    text = " ".join(words)
    loaded = load_encoder("tiny", str(tiny_bert_dir), (1,), max_length=24)
    starts = np.array([text.index("w3 "), text.rindex("w79")])
    ends = starts + np.array([2, 3])
    job = SentenceJob(0, text, starts, ends, np.array([0, 1]))
    stats = EncodeStats()
    prepared = prepare_chunk(loaded, [job], stride=4, stats=stats)
    assert stats.windows > 4 and stats.long_sentences == stats.windows - 1
    store, _ = _encode(loaded, [job], (1,), 2, tmp_path, stride=4)
    # the last word's vector is what the model gives for its window alone
    last = next(p for p in prepared if 1 in p.rows)
    with torch.no_grad():
        hidden = loaded.model(input_ids=torch.tensor([last.window.ids]), output_hidden_states=True).hidden_states[1]
    occurrence = np.repeat(np.arange(len(last.rows)), last.pieces)  # of each (occurrence, piece) pair
    positions = last.tok[occurrence == list(last.rows).index(1)]
    np.testing.assert_allclose(store.vectors(1, np.array([1]))[0], hidden[0, positions].mean(0).numpy(), atol=1e-5)


def test_unloadable_model_folder_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot load model 'broken' from the folder"):
        load_encoder("broken", str(tmp_path), (1,))


def test_hub_name_offline_fails_fast_with_a_fix(monkeypatch):
    import time

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    expected = r"'bert' \(bert-base-cased\) is not in the local Hugging Face cache.*hf download bert-base-cased"
    with pytest.raises(ConfigError, match=expected + ".*pass a local folder"):
        load_encoder("bert", "bert-base-cased", (1,))
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("family,kind", [("bert", "bidirectional"), ("gpt2", "causal"), ("llama", "causal")])
def test_gpu_mask_is_found_against_the_models_own(request, family, kind):
    """The 4D mask a GPU forward builds (no wait on the device) is the one whose result is the model's own with
    its 2D mask, at every real position of every layer; here on the CPU, where the same code runs."""
    loaded = load_encoder("tiny", str(request.getfixturevalue(f"tiny_{family}_dir")), (2,), device="cpu")
    windows = loaded.tokenize(["The king walked to the river bank", "A queen", "Paris is a city in France"], 32)
    padded, real = pad_windows(windows)
    ids, real = torch.from_numpy(padded), torch.from_numpy(real)
    assert loaded.attention == "sdpa"
    with torch.inference_mode():
        assert probe_mask_kind(loaded, ids, real) == kind
        expected = loaded._run(ids, real.long())
        got = loaded._run(ids, attention_mask_4d(real, kind))
        other = loaded._run(ids, attention_mask_4d(real, "causal" if kind == "bidirectional" else "bidirectional"))
    for e, g in zip(expected, got):
        torch.testing.assert_close(g[real], e[real], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(other[-1][real], expected[-1][real], atol=1e-3)  # the probe tells them apart
