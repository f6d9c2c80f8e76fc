"""``--engine ray`` on a local Ray cluster of 2 CPU workers: the same vectors as the local engine."""

import numpy as np
import pytest

import distill

from .test_scale import _corpus

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_ray_engine_equals_the_local_engine(tiny_bert_dir, tmp_path, local_cluster):
    corpus = _corpus(tmp_path, 1200)
    options = dict(model=str(tiny_bert_dir), corpus=[str(corpus)], layers="1,2", pooling="pc,mean", min_count=2,
                   max_occurrences=30, chunk_size=200, analyze=True, progress=False)  # fmt: skip
    local = distill.run(out=str(tmp_path / "local"), **options)
    for workers in (1, 2):
        run = distill.run(out=str(tmp_path / f"ray{workers}"), engine="ray", workers=workers, **options)
        assert run.manifest["encoding"]["tokens"] == local.manifest["encoding"]["tokens"]
        assert run.manifest["occurrences"]["encoded"] == local.manifest["occurrences"]["encoded"]
        for name, kv in local.vectors.items():
            assert run.vectors[name].index_to_key == kv.index_to_key
            np.testing.assert_allclose(run.vectors[name].vectors, kv.vectors, atol=1e-5, err_msg=name)
        intra = [r.manifest["analysis"] for r in (run, local)]
        assert intra[0]["sentences_measured"] == intra[1]["sentences_measured"] > 0
    assert ray.is_initialized()  # a cluster the caller started is left running


def test_ray_engine_refuses_piece_vectors(tiny_bert_dir, tmp_path, local_cluster):
    with pytest.raises(distill.config.ConfigError, match="--pieces and --teacher are not available with --engine ray"):
        distill.run(model=str(tiny_bert_dir), corpus=[str(_corpus(tmp_path, 200))], out=str(tmp_path / "p"),
                    min_count=2, engine="ray", pieces=True, progress=False)  # fmt: skip


def test_a_local_run_interrupted_goes_on_with_ray_to_the_same_vectors(tiny_bert_dir, tmp_path, local_cluster,
                                                                       monkeypatch):  # fmt: skip
    from distill.names import WORK_DIR
    from distill.workdir import WorkDir

    corpus = _corpus(tmp_path, 1200)
    options = dict(model=str(tiny_bert_dir), corpus=[str(corpus)], layers="1", min_count=2, max_occurrences=30,
                   chunk_size=100, checkpoint_every=0, progress=False)  # fmt: skip
    whole = distill.run(out=str(tmp_path / "whole"), **options)

    save = WorkDir.save_checkpoint

    def interrupt_after_three_chunks(self, arrays, meta):
        save(self, arrays, meta)
        if meta["chunks_done"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(WorkDir, "save_checkpoint", interrupt_after_three_chunks)
    with pytest.raises(KeyboardInterrupt):
        distill.run(out=str(tmp_path / "out"), **options)
    assert (tmp_path / "out" / WORK_DIR / "checkpoint.npz").is_file()
    monkeypatch.setattr(WorkDir, "save_checkpoint", save)
    resumed = distill.run(out=str(tmp_path / "out"), engine="ray", workers=2, **options)
    assert resumed.manifest["resumed_from_chunk"] == 3
    np.testing.assert_allclose(resumed[1].vectors, whole[1].vectors, atol=1e-5)
