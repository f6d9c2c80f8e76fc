"""Scale: folders of corpus files, greedy sentence sampling, the float16 store, checkpoints and resume."""

import errno
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import distill
from distill.config import RunConfig
from distill.corpus import WORD_RE, build_vocabulary, count_words, expand_corpus, iter_lines
from distill.encoding.store import OccurrenceStore, store_dtype, store_in_memory
from distill.errors import ConfigError, OutputError
from distill.names import WORK_DIR
from distill.occurrences import SamplingStats, iter_jobs, iter_jobs_greedy, plan_sample, shuffle_stream
from distill.rundir import RunDir
from distill.workdir import fingerprint

from ..conftest import TINY_CORPUS


def _vocab():
    return build_vocabulary(count_words(iter_lines([str(TINY_CORPUS)]), True), lowercase=True, min_count=2)


def test_a_folder_gives_its_text_files_recursively_in_order(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a.txt").write_text("one\n")
    with gzip.open(tmp_path / "b" / "c.txt.gz", "wt") as handle:
        handle.write("two\n")
    (tmp_path / "b" / "notes.md").write_text("not corpus\n")
    assert expand_corpus([str(tmp_path)]) == [str(tmp_path / "a.txt"), str(tmp_path / "b" / "c.txt.gz")]
    assert list(iter_lines([str(tmp_path)])) == ["one", "two"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"holds no text file \(.txt, .gz, .bz2, .xz\)"):
        expand_corpus([str(tmp_path / "empty")])


def test_a_file_reached_twice_is_refused_not_counted_twice(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "b.txt").write_text("two\n")
    (tmp_path / "other" / "link.txt").symlink_to(tmp_path / "other" / "b.txt")
    assert expand_corpus([str(tmp_path / "a.txt"), "-"]) == [str(tmp_path / "a.txt"), "-"]
    other = tmp_path / "other"
    for given, names in (
        ([tmp_path / "a.txt", tmp_path], f"{tmp_path / 'a.txt'}"),  # a file and the folder that holds it
        ([other], f"{other / 'b.txt'} and {other / 'link.txt'}"),  # two names of one file
    ):
        with pytest.raises(ConfigError, match=re.escape(f"reads one file twice ({names})")):
            expand_corpus([str(p) for p in given])


def test_a_folder_of_links_to_files_outside_it_is_refused_in_one_line(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "a.txt").symlink_to(tmp_path / "a.txt")
    with pytest.raises(ConfigError, match=r"holds no text file \(.*\) of its own: 1 link\(s\) to files outside it"):
        expand_corpus([str(tmp_path / "links")])
    assert expand_corpus([str(tmp_path / "links" / "a.txt")]) == [str(tmp_path / "links" / "a.txt")]  # named: read


def test_shuffle_stream_is_a_seeded_permutation():
    lines = [str(i) for i in range(1000)]
    a = list(shuffle_stream(iter(lines), buffer=100, seed=3))
    assert sorted(a, key=int) == lines and a != lines
    assert a == list(shuffle_stream(iter(lines), buffer=100, seed=3))
    assert a != list(shuffle_stream(iter(lines), buffer=100, seed=4))
    assert max(abs(int(x) - i) for i, x in enumerate(a[:500])) < 1000  # streaming: bounded lookahead


@pytest.mark.parametrize("cap", [1, 3, 1000])
def test_greedy_fills_every_row_once_and_skips_sentences_with_no_word_needed(cap):
    vocab = _vocab()
    plan = plan_sample(vocab.counts, cap=cap, seed=0, draw=False)
    index = vocab.index()
    need = plan.sizes().copy()
    stats = SamplingStats()
    lines = list(iter_lines([str(TINY_CORPUS)]))
    jobs = {job.sentence_id: job for job in iter_jobs_greedy(iter(lines), vocab, plan, stats)}
    rows = []
    for sid, text in enumerate(lines[: stats.sentences_read]):
        wanted = []
        for word in WORD_RE.findall(text):
            w = index.get(word.lower())
            if w is not None and need[w] > 0:
                need[w] -= 1
                wanted.append(w)
        assert (sid in jobs) == bool(wanted)  # encoded exactly when a word still needed an occurrence
        if sid in jobs:
            owner = np.searchsorted(plan.offsets, jobs[sid].rows, side="right") - 1
            assert owner.tolist() == wanted
            rows += jobs[sid].rows.tolist()
    assert sorted(rows) == list(range(plan.n_rows))
    if cap == 1:  # every word is full long before the end: reading stops there
        assert stats.sentences_read < len(lines)
    assert stats.sentences_kept == len(jobs)
    assert (len(jobs) < len(lines)) == (cap < 1000)  # with no cap every sentence is needed


def test_greedy_encodes_fewer_sentences_than_uniform_for_the_same_rows():
    vocab = _vocab()
    greedy, uniform = SamplingStats(), SamplingStats()
    list(iter_jobs_greedy(iter_lines([str(TINY_CORPUS)]), vocab, plan_sample(vocab.counts, 2, 0, draw=False), greedy))
    list(iter_jobs(iter_lines([str(TINY_CORPUS)]), vocab, plan_sample(vocab.counts, 2, 0), uniform))
    assert greedy.sentences_kept < uniform.sentences_kept


def test_float16_store_reopens_from_its_files(tmp_path, rng):
    store = OccurrenceStore(tmp_path, (0, 2), 5, 3, np.float16)
    x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    store.write(np.array([4, 1]), x)
    store.flush()
    state = {k: np.array(v) for k, v in store.state().items()}
    again = OccurrenceStore(tmp_path, (0, 2), 5, 3, np.float16, reopen=True)
    again.load_state(state)
    np.testing.assert_allclose(again.vectors(2, np.array([4, 1, 0])), [x[1, 0], x[1, 1], np.zeros(3)], atol=2e-3)
    assert again.matrices[0].dtype == np.float16 and again.count == 2


def test_store_on_a_full_disk_says_so(tmp_path, rng, monkeypatch):
    store = OccurrenceStore(tmp_path, (0,), 4, 3)

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("distill.encoding.store.os.pwrite", full)
    with pytest.raises(OutputError, match="occurrence store .* the disk is full; free some space"):
        store.write(np.array([0]), rng.standard_normal((1, 1, 3)))


def test_store_layer_reads_back_what_was_written_and_refuses_a_short_file(tmp_path, rng):
    store = OccurrenceStore(tmp_path, (0, 3), 4, 3)
    x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    store.write(np.array([2, 0]), x)
    np.testing.assert_array_equal(store.layer(0)[:2], x[0])
    layer3 = store.layer(3)
    assert isinstance(layer3, np.memmap) and not layer3.flags.writeable
    np.testing.assert_array_equal(layer3[store.position[[2, 0, 1]]], [x[1, 0], x[1, 1], np.zeros(3)])
    os.truncate(tmp_path / "layer3.npy", store.matrices[3].offset + 10)
    with pytest.raises(OutputError, match="shorter than its header says"):
        store.layer(3)
    with pytest.raises(OutputError, match="run again with --restart"):
        OccurrenceStore(tmp_path, (0, 3), 4, 3, reopen=True)  # a checkpoint whose store file was cut short
    ram = OccurrenceStore(None, (0,), 4, 3)
    ram.write(np.array([1]), x[:1, :1])
    np.testing.assert_array_equal(ram.layer(0)[ram.position[1]], x[0, 0])


def test_in_memory_store_reaches_its_files_only_at_a_flush(tmp_path, rng):
    store = OccurrenceStore(tmp_path, (0, 3), 6, 3, in_memory=True)
    x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    store.write(np.array([4, 1]), x)
    assert not np.load(tmp_path / "layer3.npy").any()  # nothing on disk before a checkpoint
    store.flush()
    saved = {k: np.copy(v) for k, v in store.state().items()}
    store.write(np.array([0]), rng.standard_normal((2, 1, 3)).astype(np.float32))  # after the flush: not saved
    np.testing.assert_array_equal(np.load(tmp_path / "layer3.npy")[:3], [x[1, 0], x[1, 1], np.zeros(3)])

    again = OccurrenceStore(tmp_path, (0, 3), 6, 3, reopen=True, in_memory=True)
    again.load_state(saved)
    assert again.count == 2 and not isinstance(again.layer(0), np.memmap)
    for i, layer in enumerate((0, 3)):
        np.testing.assert_array_equal(again.layer(layer)[again.position[[4, 1]]], x[i])
        assert not again.layer(layer)[2:].any()


def test_a_resumed_auto_store_keeps_the_dtype_of_its_files(tmp_path, monkeypatch):
    # auto chooses by the memory free now; a resumed run must keep what its files hold, or it cannot go on
    OccurrenceStore(tmp_path, (3,), 5, 4, np.float32)
    monkeypatch.setattr("distill.encoding.store.available_memory", lambda: 10)
    assert store_dtype("auto", 5, 4, 1) == np.float16
    assert store_dtype("auto", 5, 4, 1, saved=tmp_path / "layer3.npy") == np.float32
    assert store_dtype("float16", 5, 4, 1, saved=tmp_path / "layer3.npy") == np.float16
    assert store_dtype("auto", 5, 4, 1, saved=tmp_path / "missing.npy") == np.float16


def test_store_location_choice():
    assert store_in_memory("memory", 10**12, 768, 13, np.dtype("float32"))
    assert not store_in_memory("disk", 10, 768, 13, np.dtype("float32"))
    assert store_in_memory("auto", 1000, 768, 13, np.dtype("float32"))
    assert not store_in_memory("auto", 10**12, 768, 13, np.dtype("float16"))


def _corpus(tmp_path, n_lines=6000):
    """A corpus many chunks long: the tiny corpus's lines, seeded shuffle, repeated."""
    lines = TINY_CORPUS.read_text().splitlines()
    order = np.random.default_rng(0).integers(len(lines), size=n_lines)
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines[i] for i in order) + "\n")
    return path


def _cli(model_dir, corpus, out, *extra):
    return [sys.executable, "-m", "distill", "run", "--model", str(model_dir), "--corpus", str(corpus),
            "--out", str(out), "--layers", "1,2", "--pooling", "pc,mean", "--min-count", "2",
            "--max-occurrences", "40", "--chunk-size", "40", "--checkpoint-every", "0", "--analyze",
            "--pieces", "--no-progress", "-v", *extra]  # fmt: skip


def _kill_after_checkpoints(cmd, work, sig, chunks=3):
    """Start ``cmd``, send ``sig`` once its checkpoint has ``chunks`` chunks done (and the pass is not done)."""
    # A shell that starts jobs in the background (CI's may) ignores SIGINT in them, and Python then
    # installs no KeyboardInterrupt handler: give the child the default disposition, as a terminal does.
    process = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    sent = False
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.002)
        try:
            with np.load(work / "checkpoint.npz") as data:
                meta = json.loads(str(data["_meta"]))
        except Exception:  # not written yet, or replaced while being read
            continue
        if meta["chunks_done"] >= chunks and not meta["done"]:
            process.send_signal(sig)
            sent = True
            break
    _, stderr = process.communicate(timeout=60)
    assert sent, f"the run ended before a checkpoint of {chunks} chunks was seen: {stderr.decode()[-2000:]}"
    return process.returncode, stderr.decode()


@pytest.fixture(scope="module")
def uninterrupted(tiny_bert_dir, tmp_path_factory):
    """A corpus of 150 chunks and the outputs of a run on it that nothing stopped."""
    tmp = tmp_path_factory.mktemp("whole")
    corpus = _corpus(tmp)
    whole = subprocess.run(_cli(tiny_bert_dir, corpus, tmp / "out"), capture_output=True, timeout=300)
    assert whole.returncode == 0, whole.stderr.decode()
    return corpus, tmp / "out"


@pytest.mark.parametrize(
    ("sig", "store"),
    [(signal.SIGKILL, "memory"), (signal.SIGKILL, "disk"), (signal.SIGKILL, "device"), (signal.SIGINT, "auto")],
)
def test_a_killed_run_goes_on_from_its_checkpoint_to_the_same_vectors(
    tiny_bert_dir, uninterrupted, tmp_path, sig, store
):
    corpus, whole = uninterrupted
    out = tmp_path / "killed"
    cmd = _cli(tiny_bert_dir, corpus, out, "--store", store)
    code, stderr = _kill_after_checkpoints(cmd, out / WORK_DIR, sig)
    assert code == (-9 if sig == signal.SIGKILL else 130), stderr
    if sig == signal.SIGINT:
        assert "run the same command again to go on from the last checkpoint" in stderr
        assert stderr.count("interrupted") == 1  # one line, not a log warning and a CLI line
    assert (out / WORK_DIR / "checkpoint.npz").is_file() and not (out / "manifest.json").exists()

    again = subprocess.run(cmd, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()
    assert "resuming from a checkpoint" in again.stderr.decode()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["resumed_from_chunk"] >= 3
    for name in ("layer1.pc.bin", "layer2.mean.bin", "layer2.pieces.npz"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    analysis = [json.loads((d / "analysis.json").read_text())["layers"] for d in (out, whole)]
    assert analysis[0] == analysis[1]
    # the counts too: chunks tokenized ahead of the checkpoint are not counted twice
    full = json.loads((whole / "manifest.json").read_text())
    for key in ("sentences", "windows", "long_sentences", "tokens"):
        assert manifest["encoding"][key] == full["encoding"][key], key
    for key in ("encoded", "not_aligned", "unknown_token"):
        assert manifest["occurrences"][key] == full["occurrences"][key], key
    assert not (out / WORK_DIR).exists()


def test_changed_options_start_afresh_and_a_second_writer_is_refused(tiny_bert_dir, tmp_path):
    corpus = _corpus(tmp_path, 2000)
    out = tmp_path / "out"
    code, _ = _kill_after_checkpoints(_cli(tiny_bert_dir, corpus, out), out / WORK_DIR, signal.SIGKILL, chunks=1)
    assert code == -9
    other = subprocess.run(_cli(tiny_bert_dir, corpus, out, "--seed", "1"), capture_output=True, timeout=300)
    assert other.returncode == 0, other.stderr.decode()
    assert "starting afresh" in other.stderr.decode()
    assert json.loads((out / "manifest.json").read_text())["resumed_from_chunk"] is None

    holder = RunDir(out).claim()
    try:
        with pytest.raises(ConfigError, match="another distill run is writing to"):
            distill.run(model=str(tiny_bert_dir), corpus=[str(corpus)], out=str(out), min_count=2, progress=False)
    finally:
        holder.release()


def test_a_corpus_copied_afresh_keeps_its_checkpoint_and_a_changed_byte_does_not(tmp_path):
    corpus = _corpus(tmp_path, 50)
    config = RunConfig(corpus=(str(corpus),))
    before = fingerprint(config, config.corpus, "1")
    stat = os.stat(corpus)
    os.utime(corpus, ns=(stat.st_atime_ns + 10**12, stat.st_mtime_ns + 10**12))  # same bytes, new times
    assert fingerprint(config, config.corpus, "1") == before
    text = corpus.read_bytes()
    corpus.write_bytes(text[:-2] + (b"x" if text[-2:-1] != b"x" else b"y") + text[-1:])  # same size
    assert fingerprint(config, config.corpus, "1") != before


def test_greedy_run_reports_what_it_skipped(tiny_bert_dir, tmp_path):
    corpus = _corpus(tmp_path, 3000)
    result = distill.run(model=str(tiny_bert_dir), corpus=[str(corpus)], out=str(tmp_path / "g"), min_count=2,
                         max_occurrences=5, sampling="greedy", store_dtype="float16", progress=False)  # fmt: skip
    sampling = result.manifest["occurrences"]["sampling"]
    assert sampling["method"] == "greedy" and sampling["stopped_early"]
    assert sampling["sentences_read"] < 3000 and sampling["share_skipped"] > 0.5
    assert result.manifest["occurrences"]["encoded"] == result.manifest["occurrences"]["planned"]
    assert result.manifest["occurrences"]["store_dtype"] == "float16"


def test_a_copy_of_stdin_cut_short_leaves_no_work_folder(tmp_path, monkeypatch):
    from distill.workdir import RunInterrupted, WorkDir, open_run

    def cut_short(self, corpus):
        (self.path / "stdin.txt").write_text("half a copy")
        raise KeyboardInterrupt

    monkeypatch.setattr(WorkDir, "spool", cut_short)
    out = tmp_path / "out"
    config = RunConfig(model=str(tmp_path / "m"))
    with (
        pytest.raises(RunInterrupted, match="stdin cannot be read again"),
        open_run(out, config, ("-",), {"distill": "dev"}),
    ):
        pass
    assert out.is_dir() and not (out / WORK_DIR).exists()


def test_a_second_run_is_refused_before_it_hashes_the_corpus(tmp_path, monkeypatch):
    from distill.workdir import open_run

    corpus, out = tmp_path / "corpus.txt", tmp_path / "out"
    corpus.write_text("the king\n")
    config = RunConfig(model=str(tmp_path / "m"))
    with open_run(out, config, (str(corpus),), {"distill": "dev"}) as opened:
        assert not opened.reused and (out / WORK_DIR / "fingerprint.json").is_file()
        monkeypatch.setattr("distill.workdir.fingerprint", lambda *args: pytest.fail("the corpus was hashed"))
        with (
            pytest.raises(ConfigError, match="another distill run"),
            open_run(out, config, (str(corpus),), {"distill": "dev"}),
        ):
            pass
