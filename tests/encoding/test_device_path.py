"""The GPU path exercised on CPU tensors: token-budget batches, the device store, reduction where the store
lives, forward timing, FAISS on a GPU when there is one."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import distill
from distill.config import GPU_BATCH_TOKENS, Pooling, RunConfig, token_budget
from distill.encoders import load_encoder
from distill.encoding.batches import ChunkDone, ForwardTimer, iter_batches
from distill.encoding.device_store import DeviceStore, placement
from distill.encoding.store import OccurrenceStore
from distill.encoding.workers import given_or_own_pool
from distill.occurrences import iter_jobs, plan_sample
from distill.reduction import reduce_words

from ..conftest import TINY_CORPUS
from .test_scale import _vocab


def test_token_budget_defaults_to_batches_of_tokens_on_a_gpu_only():
    assert token_budget(None, torch.device("cuda")) == GPU_BATCH_TOKENS
    assert token_budget(None, torch.device("cpu")) is None
    assert token_budget(0, torch.device("cuda")) is None
    assert token_budget(500, torch.device("cpu")) == 500
    with pytest.raises(distill.ConfigError, match="--batch-tokens"):
        RunConfig(batch_tokens=-1)


def test_token_batches_hold_at_most_the_budget_and_every_window_once(tiny_bert_dir):
    model = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (1,), device="cpu")
    vocab = _vocab()
    jobs = list(iter_jobs(distill.corpus.iter_lines([str(TINY_CORPUS)]), vocab, plan_sample(vocab.counts, 50, 0)))

    def windows(**kw):
        batches = [b for b in iter_batches(model, jobs, chunk_size=len(jobs), **kw) if not isinstance(b, ChunkDone)]
        return batches, [tuple(row[:n]) for b in batches for row, n in zip(b.ids.tolist(), b.lengths.tolist())]

    by_tokens, ids = windows(batch_tokens=2000)
    _, ids_by_sentences = windows(batch_size=64)
    assert ids == ids_by_sentences  # the same windows in the same (length-sorted) order
    assert len(by_tokens) > 1
    for batch in by_tokens:
        assert batch.ids.shape[1] == batch.lengths.max()  # padded to its longest window, no further
        assert batch.ids.size <= 2000 or len(batch.ids) == 1
    sizes = [len(b.ids) for b in by_tokens]
    assert max(sizes) > 64 and sizes[0] > sizes[-1]  # short windows share a batch by the hundred


def test_device_store_on_cpu_tensors_checkpoints_like_the_host_store(tmp_path, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    store = DeviceStore(tmp_path, (0, 2), 5, 4, device="cpu")
    assert placement(10**12, torch.device("cpu")) == (torch.device("cpu"), False)
    store.write(np.array([3, 0, 4]), torch.from_numpy(x))
    assert not np.load(tmp_path / "layer2.npy").any()  # nothing on disk before a checkpoint
    store.flush()
    saved = {k: np.copy(v) for k, v in store.state().items()}
    store.write(np.array([1]), torch.ones(2, 1, 4))  # after the flush: not saved

    host = OccurrenceStore(tmp_path, (0, 2), 5, 4, reopen=True, in_memory=True)
    again = DeviceStore(tmp_path, (0, 2), 5, 4, reopen=True, device="cpu")
    for reopened in (host, again):
        reopened.load_state(saved)
        assert reopened.count == 3
        for i, layer in enumerate((0, 2)):
            np.testing.assert_array_equal(reopened.vectors(layer, np.array([3, 0, 4])), x[i])
            assert not np.asarray(reopened.vectors(layer, np.array([1]))).any()
    with pytest.raises(ValueError, match="twice"):
        again.write(np.array([0]), torch.zeros(2, 1, 4))


@pytest.mark.parametrize("pooling", [Pooling.PC, Pooling.MEAN])
def test_reduction_over_a_device_store_equals_the_host_store(rng, pooling):
    n_words, cap, dim = 40, 7, 6
    offsets = np.arange(0, (n_words + 1) * cap, cap)
    rows = rng.permutation(n_words * cap)[: n_words * cap - 30]  # some rows never filled
    vectors = rng.standard_normal((1, len(rows), dim)).astype(np.float32)
    host = OccurrenceStore(None, (1,), n_words * cap, dim)
    device = DeviceStore(None, (1,), n_words * cap, dim, device="cpu")
    for store in (host, device):
        for part in np.array_split(np.arange(len(rows)), 5):
            store.write(rows[part], vectors[:, part] if store is host else torch.from_numpy(vectors[:, part]))
    filled = host.filled_per_word(offsets)
    assert isinstance(device.layer(1), torch.Tensor)
    expected = reduce_words(host.layer(1), offsets, filled, pooling, position=host.position)
    got = reduce_words(device.layer(1), offsets, filled, pooling, position=device.position)
    np.testing.assert_array_equal(got, expected)


def test_forward_timer_on_a_cpu_adds_wall_time():
    timer = ForwardTimer(torch.device("cpu"))
    timer.start()
    sum(range(10**5))
    timer.stop()
    first = timer.seconds()
    assert first > 0 and timer.seconds(wait=False) == first


def test_a_run_with_the_device_store_and_token_batches_matches_the_default(tiny_bert_dir, tmp_path):
    common = {"model": str(tiny_bert_dir), "corpus": (str(TINY_CORPUS),), "layers": "1,2", "min_count": 2,
              "pooling": "pc,mean", "progress": False}  # fmt: skip
    default = distill.run(out=tmp_path / "a", **common)
    device = distill.run(out=tmp_path / "b", store="device", batch_tokens=200, **common)
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["occurrences"]["store"] == "device" and manifest["encoding"]["batch_tokens"] == 200
    assert manifest["model"]["attention"] in {"sdpa", "eager"}
    for name in ("layer1.pc", "layer2.mean"):
        a, b = default.vectors[name], device.vectors[name]
        assert a.index_to_key == b.index_to_key
        np.testing.assert_allclose(b.vectors, a.vectors, atol=2e-5)  # other padding, same vectors


@pytest.mark.parametrize("sampling", ["uniform", "greedy"])
def test_a_run_whose_host_work_is_in_worker_processes_gives_the_same_files(tiny_bert_dir, tmp_path, sampling):
    """Counting, the walk and tokenizing in a pool (a GPU run's default) change no byte of what a run writes."""
    common = {"model": str(tiny_bert_dir), "corpus": (str(TINY_CORPUS),), "layers": "1,2", "min_count": 2,
              "pooling": "mean", "sampling": sampling, "max_occurrences": 3, "chunk_size": 5,
              "progress": False}  # fmt: skip
    distill.run(out=tmp_path / "a", tokenize_workers=0, **common)
    distill.run(out=tmp_path / "b", tokenize_workers=2, **common)
    for name in ("layer1.mean.bin", "layer2.mean.txt", "layer1.pieces.npz", "vocab.tsv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_faiss_builds_on_a_gpu_when_its_build_has_one_and_on_the_cpu_otherwise(rng, monkeypatch):
    faiss = pytest.importorskip("faiss")
    from distill.vectors import faiss_index

    vectors = rng.standard_normal((50, 8)).astype(np.float32)
    cpu = faiss_index.build_faiss_index(vectors)
    moved = []

    def to_gpu(resources, device, index):
        moved.append(device)
        return index

    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1, raising=False)
    monkeypatch.setattr(faiss, "StandardGpuResources", lambda: object(), raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu", to_gpu, raising=False)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", lambda index: index, raising=False)
    gpu = faiss_index.build_faiss_index(vectors)
    assert moved == [0]
    np.testing.assert_array_equal(gpu.search(vectors[:5], 3)[1], cpu.search(vectors[:5], 3)[1])
    monkeypatch.setenv("DISTILL_FAISS_GPU", "0")
    moved.clear()
    faiss_index.build_faiss_index(vectors)
    assert moved == []


def test_a_pool_of_tokenizing_workers_gives_the_same_batches_in_order(tiny_bert_dir):
    model = load_encoder(str(tiny_bert_dir), str(tiny_bert_dir), (1,), device="cpu")
    vocab = _vocab()
    jobs = list(iter_jobs(distill.corpus.iter_lines([str(TINY_CORPUS)]), vocab, plan_sample(vocab.counts, 50, 0)))

    def run(workers):
        out = []
        with given_or_own_pool(None, workers, "cpu") as pool:
            items = list(iter_batches(model, jobs, chunk_size=7, skip_chunks=2, pool=pool))
        for item in items:
            if isinstance(item, ChunkDone):
                out.append(("done", item.index, item.counts.sentences, item.counts.windows))
            else:
                fields = ("ids", "lengths", "content", "fresh", "rows", "tok", "pieces", "sentence")
                out.append([getattr(item, k).tolist() for k in fields] + [item.sentences()])
        return out

    alone = run(0)
    assert alone[0] == ("done", 0, 0, 0) and len(alone) > 10  # a skipped chunk is not tokenized
    assert run(2) == alone


def test_a_worker_starts_without_torch():
    """Each worker imports what its tasks run (counting, the walk, tokenizing): torch among it would cost every
    worker seconds to start (RESULTS.md)."""
    modules = "distill.parallel, distill.corpus, distill.occurrences, distill.encoding.workers"
    code = f"import sys, {modules}; print(sorted({{'torch', 'transformers'}} & set(sys.modules)))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert imported.strip() == "[]"
