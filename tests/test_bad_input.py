"""Bad input as a new user meets it: the CLI exits 2 with one line that says what is wrong, runs no code from a
model folder, and leaves nothing on disk that could pass for a result."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import distill
from distill.errors import ConfigError
from distill.names import WORK_DIR, is_temporary
from distill.vectors.keyed import to_keyed_vectors, write_word2vec

from .conftest import TINY_CORPUS

EVIL = """
from pathlib import Path
Path(__file__).with_name("RAN").write_text("code from the model folder ran")
"""


def _cli(*args: str, stdin: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "distill", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


def _one_error(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """The run failed with exit 2 and one line holding each of ``expected``."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def _run_args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--model", str(model), "--corpus", str(TINY_CORPUS), "--out", str(out), "--min-count", "3",
            "--max-occurrences", "5", "--no-progress", *extra]  # fmt: skip


@pytest.fixture
def model_copy(tiny_bert_dir, tmp_path) -> Path:
    return Path(shutil.copytree(tiny_bert_dir, tmp_path / "model"))


# -- 1. no code from a model folder runs


def test_a_model_that_asks_to_run_its_code_is_refused_and_its_code_never_runs(tmp_path):
    model = tmp_path / "evil-model"
    model.mkdir()
    (model / "evil.py").write_text(EVIL)
    config = {"model_type": "evilbert", "auto_map": {"AutoConfig": "evil.Config", "AutoModel": "evil.Model"}}
    (model / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    # "y" on stdin, twice: once as the corpus, once for a prompt that must never come
    done = _cli(*_run_args(model, out)[:3], "--corpus", "-", "--out", str(out), stdin="y\ny\nthe king\n")
    _one_error(done, "asks to run Python code shipped with it", "never runs code")
    assert not (model / "RAN").exists()
    assert not out.exists()


def test_remote_code_named_by_a_known_architecture_is_not_run_either(model_copy, tmp_path):
    (model_copy / "evil.py").write_text(EVIL)
    for name, key in (("config.json", "AutoModel"), ("tokenizer_config.json", "AutoTokenizer")):
        data = json.loads((model_copy / name).read_text())
        data["auto_map"] = {key: "evil.Model" if key == "AutoModel" else ["evil.Tokenizer", "evil.Tokenizer"]}
        (model_copy / name).write_text(json.dumps(data))
    done = _cli(*_run_args(model_copy, tmp_path / "out"), stdin="y\ny\n")
    assert not (model_copy / "RAN").exists()
    if done.returncode != 0:  # transformers loads the architecture it ships, or refuses: never the folder's code
        _one_error(done, "never runs code")


# -- 2. wrong results with exit code 0


def test_a_model_folder_without_its_tokenizer_is_refused(model_copy, tmp_path):
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (model_copy / name).unlink(missing_ok=True)
    done = _cli(*_run_args(model_copy, tmp_path / "out"))
    _one_error(done, "tokenizer", "missing or belong to another model")
    assert not (tmp_path / "out").exists()


def test_occurrences_that_are_only_the_unknown_token_are_refused(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "greek.txt"
    corpus.write_text("".join("Καλημέρα κόσμε, ήλιος και θάλασσα σήμερα.\n" for _ in range(20)), encoding="utf-8")
    with pytest.raises(ConfigError, match="nothing but the tokenizer's unknown piece"):
        distill.run(model=str(tiny_bert_dir), corpus=[str(corpus)], out=str(tmp_path / "out"), min_count=3,
                    alpha_only=True, progress=False)  # fmt: skip


def test_a_reused_output_folder_holds_only_the_new_run(tiny_bert_dir, tmp_path):
    out = tmp_path / "out"
    assert _cli(*_run_args(tiny_bert_dir, out, "--layers", "1,2", "--pooling", "pc,mean")).returncode == 0
    (out / "notes.txt").write_text("the user's own file")
    (out / ".layer9.pc.txt.tmp-999999").write_text("left by a killed run")
    assert _cli(*_run_args(tiny_bert_dir, out, "--layers", "1")).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    ours = {p.name for p in out.iterdir()} - {"notes.txt"}
    assert ours == {"manifest.json", *manifest["files"]}  # nothing of the first run, no stale temporary
    assert not any(is_temporary(name) for name in ours)
    assert (out / "notes.txt").read_text() == "the user's own file"
    done = _cli("neighbors", str(out), "king", "--layers", "2")
    _one_error(done, "has no set layer2.pc")
    _one_error(_cli("neighbors", str(out), "king", "--layer", "2"), "has no set layer2.pc")  # the old spelling
    _one_error(_cli("derive", str(out), "--layers", "2", "--pooling", "mean"), "distil layer 2 with pooling mean first")


@pytest.mark.parametrize("name", ["layer1.pc.txt", "vocab.tsv", "layers4-6.mean.bin"])
def test_a_file_of_a_run_s_name_that_no_run_here_wrote_is_never_overwritten(tiny_bert_dir, tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("the user's own file")
    _one_error(
        _cli(*_run_args(tiny_bert_dir, out, "--layers", "1", "--best")), f"{name} was not written by a distill run"
    )
    assert [p.name for p in out.iterdir()] == [name] and (out / name).read_text() == "the user's own file"


def test_a_manifest_that_distill_did_not_write_is_never_overwritten(tiny_bert_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text('{"project": "mine"}')
    done = _cli(*_run_args(tiny_bert_dir, out))
    _one_error(done, "was not written by distill", "choose another --out")
    assert (out / "manifest.json").read_text() == '{"project": "mine"}'
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


def test_a_corpus_folder_used_as_output_folder_is_not_read_back(tiny_bert_dir, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(TINY_CORPUS, folder / "text.txt")
    first = distill.run(model=str(tiny_bert_dir), corpus=[str(folder)], out=str(folder), min_count=3,
                        max_occurrences=5, progress=False)  # fmt: skip
    second = distill.run(model=str(tiny_bert_dir), corpus=[str(folder)], out=str(folder), min_count=3,
                         max_occurrences=5, progress=False, resume=False)  # fmt: skip
    assert not second.reused  # distilled again, reading the folder with the first run's files in it
    assert [Path(f["path"]).name for f in second.manifest["corpus"]["files"]] == ["text.txt"]
    assert second.manifest["vocabulary"] == first.manifest["vocabulary"]
    np.testing.assert_array_equal(second[1].vectors, first[1].vectors)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e40"])
def test_evaluate_refuses_nan_and_infinity_with_the_line_at_fault(tmp_path, value):
    """1e40 is beyond float32: one line too, without numpy's overflow warning before it."""
    path = tmp_path / "vectors.txt"
    path.write_text(f"3 2\nking 0.1 0.2\nqueen 0.3 {value}\nman 0.5 0.6\n")
    _one_error(_cli("evaluate", str(path), "--benchmarks", "men"), "line 3", "'queen'", "NaN, infinity or a number")
    kv = to_keyed_vectors(["king", "queen"], np.array([[0.1, 0.2], [np.nan, 1.0]], dtype=np.float32))
    write_word2vec(kv, tmp_path / "vectors.bin", binary=True)
    _one_error(_cli("evaluate", str(tmp_path / "vectors.bin"), "--benchmarks", "men"), "'queen'", "NaN or infinity")


# -- 3. a folder that looks finished but is not


def test_a_run_killed_while_writing_leaves_a_folder_that_says_it_is_unfinished(tiny_bert_dir, tmp_path, monkeypatch):
    import distill.vectors.faiss_index
    from distill.errors import OutputError

    def full_disk(*args, **kwargs):
        raise OutputError("disk full while writing layer2.pc.faiss; free some space or choose another --out")

    out = tmp_path / "out"
    distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), layers="1", min_count=3,
                max_occurrences=5, progress=False)  # fmt: skip
    monkeypatch.setattr(distill.vectors.faiss_index, "write_faiss", full_disk)
    with pytest.raises(OutputError, match="disk full"):
        distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), layers="1,2", min_count=3,
                    max_occurrences=5, progress=False)  # fmt: skip
    assert not (out / "manifest.json").exists()  # the old run's manifest went first, the new one never came
    with pytest.raises(ConfigError, match="did not finish"):
        distill.load(out, layer=1)
    monkeypatch.undo()
    _one_error(_cli("neighbors", str(out), "king", "--layers", "1"), "did not finish")


def test_a_folder_whose_manifest_does_not_list_its_files_is_incomplete(tiny_bert_dir, tmp_path):
    out = tmp_path / "out"
    distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), layers="1", min_count=3,
                max_occurrences=5, progress=False)  # fmt: skip
    shutil.copy(out / "layer1.pc.txt", out / "layer7.pc.txt")
    with pytest.raises(ConfigError, match=r"incomplete or mixed \(layer7.pc.txt is not from its run\)"):
        distill.load(out, layer=1)
    _one_error(_cli("evaluate", str(out), "--benchmarks", "men"), "incomplete or mixed")
    (out / "layer7.pc.txt").unlink()
    (out / "layer1.pc.bin").unlink()
    with pytest.raises(ConfigError, match=r"incomplete or mixed \(layer1.pc.bin is missing\)"):
        distill.load(out, layer=1)


# -- 4. one clear line, not a traceback


def test_a_damaged_gzip_corpus(tiny_bert_dir, tmp_path):
    bad = tmp_path / "corpus.txt.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    _one_error(_cli(*_run_args(tiny_bert_dir, tmp_path / "out")[:3], "--corpus", str(bad), "--out",
                    str(tmp_path / "out")), "cannot read corpus file", "damaged or truncated")  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_truncated_model_weights(model_copy, tmp_path):
    weights = model_copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    _one_error(_cli(*_run_args(model_copy, tmp_path / "out")), "cannot load model", "undamaged")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--seed", "-1"], "--seed must be 0 or more"),
        (["--device", "mps"], "no Apple GPU"),
        (["--max-length", "100000"], "--max-length 100000 is more than this model reads: at most 128 tokens"),
        (["--stride", "600"], "--stride 600 must be under half the window of 128 tokens"),
        (["--layers", "-1"], "layer -1 is out of range: layers count from 0"),
        (["--corpus", "-", "--corpus", "-"], "stdin (-) can be read once"),
        (["--corpus", str(TINY_CORPUS)], f"reads one file twice ({TINY_CORPUS})"),
        (["--corpus", str(TINY_CORPUS.parent)], f"reads one file twice ({TINY_CORPUS})"),  # a folder holding it
    ],
)
def test_options_that_cannot_work_fail_before_any_model_loads(tiny_bert_dir, tmp_path, options, message):
    out = tmp_path / "out"
    _one_error(_cli(*_run_args(tiny_bert_dir, out), *options, stdin=""), message)
    assert not out.exists()


def test_a_damaged_checkpoint_says_run_again_with_restart(tmp_path):
    from distill.errors import OutputError
    from distill.workdir import WorkDir

    work = WorkDir(tmp_path)
    work.open(None, ())
    (work.path / "checkpoint.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(OutputError, match="is damaged .*run again with --restart"):
        work.load_checkpoint()
    work.close(remove=True)


def test_a_table_with_baselines_refuses_stdin_before_it_distils(tiny_bert_dir, tmp_path):
    out = tmp_path / "table"
    args = ["table", "--model", str(tiny_bert_dir), "--corpus", "-", "--out", str(out), "--no-progress"]
    _one_error(_cli(*args, stdin=TINY_CORPUS.read_text()), "reads its corpus twice")
    assert not out.exists()


def test_a_damaged_counted_vocabulary_says_run_again_with_restart(tmp_path):
    from distill.errors import OutputError
    from distill.workdir import WorkDir

    work = WorkDir(tmp_path)
    work.open(None, ())
    (work.path / "vocabulary.json").write_text('{"words": ["king"')
    with pytest.raises(OutputError, match="counted vocabulary .* is damaged .*run again with --restart"):
        work.load_vocabulary()
    work.close(remove=True)


def test_a_teacher_with_a_damaged_pooling_config_is_one_error(tmp_path):
    from distill.errors import ConfigError
    from distill.tune.teacher import teacher_pooling

    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text("{")
    with pytest.raises(ConfigError, match="the model folder is damaged"):
        teacher_pooling(tmp_path)


def test_a_work_folder_that_is_a_link_is_refused(tiny_bert_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / WORK_DIR).symlink_to(elsewhere)
    _one_error(_cli(*_run_args(tiny_bert_dir, out)), "is a symbolic link")
    assert elsewhere.is_dir() and not any(elsewhere.iterdir())


@pytest.fixture(scope="module")
def finished_run(tiny_bert_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "out"
    distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), min_count=3, max_occurrences=5,
                progress=False)  # fmt: skip
    return out


def test_neighbors_refuses_an_empty_word(finished_run):
    _one_error(_cli("neighbors", str(finished_run), "king", " "), "a query word is empty")


@pytest.mark.parametrize("k", ["-5", "0"])
def test_neighbors_needs_a_positive_k(finished_run, k):
    done = _cli("neighbors", str(finished_run), "king", "-k", k)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "-k" in done.stderr


def test_neighbors_beyond_the_vocabulary_are_every_other_word(finished_run):
    words = [line.split("\t")[0] for line in (finished_run / "vocab.tsv").read_text().splitlines()]
    done = _cli("neighbors", str(finished_run), words[0], "-k", str(10**20))  # no array of 10^20 scores
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split(": ", 1)[1].split(", ")) == len(words) - 1


@pytest.mark.parametrize("command", ["export", "neighbors"])
def test_an_unknown_pooling_is_listed_with_its_choices(finished_run, command):
    args = [command, str(finished_run), *(["king"] if command == "neighbors" else []), "--pooling", "max"]
    done = _cli(*args)
    assert done.returncode == 2 and "'max' is not one of 'pc', 'mean'" in done.stderr


def test_neighbors_reading_a_word_alone_prints_only_its_answer(finished_run):
    """Loading the model for ``--oov alone`` off a terminal: no Hugging Face progress bar or warning on stderr."""
    done = _cli("neighbors", str(finished_run), "zzyzx", "-k", "3", "--oov", "alone")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("zzyzx (read alone by the model): ") and done.stdout.count(",") == 2
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("option", "said"),
    [(["--set", "best"], "is a vector file, not a run folder"), (["--layers", "1"], "is a vector file, not a run"),
     (["--oov", "alone"], "words are read alone by a run's model")],
)  # fmt: skip
def test_a_vector_file_is_not_given_what_only_a_run_folder_has(finished_run, option, said):
    """A set or the model's reading asked of a plain vector file was ignored: the answer came from the file."""
    vectors = finished_run / "layer1.pc.txt"
    _one_error(_cli("neighbors", str(vectors), "king", *option), said)
    with pytest.raises(ConfigError, match=said):
        distill.load(
            vectors, **{"--set": {"vector_set": "best"}, "--layers": {"layer": 1}}.get(option[0], {"oov": "alone"})
        )
    assert _cli("neighbors", str(vectors), "king").returncode == 0


def test_evaluate_refuses_a_set_asked_of_vector_files_alone(finished_run, tmp_path):
    vectors = str(finished_run / "layer1.pc.txt")
    args = ("--benchmarks", "ws353", "--no-progress", "--out", str(tmp_path / "report"))
    _one_error(_cli("evaluate", vectors, "--set", "layer1.pc", *args), "--set layer1.pc picks a set of a run folder")
    assert _cli("evaluate", vectors, str(finished_run), "--set", "layer1.pc", *args).returncode == 0
    with pytest.raises(ConfigError, match="picks a set of a run folder"):
        distill.evaluate(vectors, vector_set="layer1.pc", benchmarks="ws353")


def test_export_onto_a_file_or_a_link(finished_run, tmp_path):
    target = tmp_path / "layer1.pc.npy"
    target.write_text("a file of the user's")
    done = _cli("export", str(finished_run), "--format", "npy,kv", "--out", str(tmp_path))
    _one_error(done, "exists and is not a folder")
    assert target.read_text() == "a file of the user's"
    done = _cli("export", str(finished_run), "--format", "npy", "--out", str(tmp_path))  # OUT is the folder itself
    _one_error(done, "holds files that distill did not export")
    assert target.read_text() == "a file of the user's"
    not_a_folder = tmp_path / "plain-file"
    not_a_folder.write_text("x")
    _one_error(_cli("export", str(finished_run), "--format", "npy,kv", "--out", str(not_a_folder)), "cannot write")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "empty", target_is_directory=True)
    (tmp_path / "empty").mkdir()
    for given in (not_a_folder, link):  # one folder format: OUT would be the folder itself
        _one_error(_cli("export", str(finished_run), "--format", "npy", "--out", str(given)), "is a file or a link")
    assert not_a_folder.read_text() == "x" and not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize(
    "formats, repo, says",
    [
        ("model2vec", "not a name!", "is not a hub repository id"),
        ("word2vec", "me/vectors", "--format gives neither"),
        ("model2vec,sentence-transformers", "me/vectors", "--format gives model2vec and sentence-transformers"),
    ],
)
def test_a_push_that_cannot_work_is_refused_before_the_export(finished_run, tmp_path, formats, repo, says):
    out = tmp_path / "export"
    _one_error(_cli("export", str(finished_run), "--format", formats, "--push-to-hub", repo, "--out", str(out)), says)
    assert not out.exists()


def test_evaluate_a_damaged_or_truncated_gzip(tmp_path):
    text = "".join(f"w{i} {i}.0 1.0\n" for i in range(2000)).encode()
    whole = gzip.compress(b"2000 2\n" + text)
    (tmp_path / "cut.txt.gz").write_bytes(whole[: len(whole) // 2])
    _one_error(_cli("evaluate", str(tmp_path / "cut.txt.gz"), "--benchmarks", "men"), "damaged or truncated")
    (tmp_path / "junk.txt.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(300))
    _one_error(_cli("evaluate", str(tmp_path / "junk.txt.gz"), "--benchmarks", "men"), "damaged or truncated")
    (tmp_path / "packed.txt").write_bytes(whole)  # compressed data under a plain name, then in another format
    _one_error(_cli("evaluate", str(tmp_path / "packed.txt"), "--benchmarks", "men"), "gzip-compressed", "ends in .gz")
    (tmp_path / "packed.txt.xz").write_bytes(lzma.compress(b"2000 2\n" + text))
    _one_error(_cli("evaluate", str(tmp_path / "packed.txt.xz"), "--benchmarks", "men"), "xz-compressed", "decompress")


def test_evaluate_names_a_missing_file_and_one_that_is_not_a_regular_file(tmp_path):
    _one_error(_cli("evaluate", str(tmp_path / "missing.txt"), "--benchmarks", "men"), "not found")
    _one_error(_cli("evaluate", "/dev/null", "--benchmarks", "men"), "/dev/null is not a regular file")


# -- 5. smaller


def test_a_vocabulary_file_whose_words_never_occur(tiny_bert_dir, tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("zebra\nquokka\n")
    _one_error(_cli(*_run_args(tiny_bert_dir, tmp_path / "out"), "--vocab-file", str(words)),
               "none of the 2 words of the vocabulary file occurs in the corpus")  # fmt: skip


def test_an_empty_corpus_leaves_no_output_folder(tiny_bert_dir, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    out = tmp_path / "out"
    _one_error(_cli(*_run_args(tiny_bert_dir, out)[:3], "--corpus", str(empty), "--out", str(out)), "has no text")
    assert not out.exists()


def test_a_100000_character_line_is_read_in_windows(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "long.txt"
    corpus.write_text(" ".join(["the king walked to the market"] * 16_000)[:100_000] + "\n" + TINY_CORPUS.read_text())
    result = distill.run(model=str(tiny_bert_dir), corpus=[str(corpus)], out=str(tmp_path / "out"), min_count=3,
                         max_occurrences=5, progress=False)  # fmt: skip
    assert result.manifest["encoding"]["long_sentences"] >= 1 and "king" in result[1].key_to_index


def test_an_unknown_model_offline_says_how_to_get_it(tmp_path):
    done = _cli(
        "run", "--model", "no-such-org/no-such-model", "--corpus", str(TINY_CORPUS), "--out", str(tmp_path / "o")
    )
    _one_error(done, "no-such-org/no-such-model", "pass a local folder")
    assert not (tmp_path / "o").exists()


def test_reading_words_alone_without_the_runs_model_is_one_clear_line(tiny_bert_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    distill.run(model=str(model), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1", pooling="mean",
                pieces=False, progress=False)  # fmt: skip
    from distill.rundir import RunDir

    assert RunDir(tmp_path / "run").resolve_set() == "layer1.mean"  # a mean-only run's default set
    shutil.rmtree(model)  # the run folder moved to a machine without its model
    done = _cli("evaluate", str(tmp_path / "run"), "--benchmarks", "simlex999", "--oov", "standard,alone",
                "--out", str(tmp_path / "eval"))  # fmt: skip
    _one_error(done, "read alone by the run's model", "not there any more", "--oov pieces")
    assert not (tmp_path / "eval").exists()


def test_tuning_on_an_unknown_device_is_one_clear_line(tmp_path):
    _one_error(_cli("tune", str(tmp_path), "--device", "gpu"), "unknown device 'gpu'")


def test_distill_model_on_an_unknown_device_is_one_clear_line(tiny_bert_dir, tmp_path):
    done = _cli("model", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(tmp_path / "m"),
                "--teacher-bags", "0", "--device", "gpu")  # fmt: skip
    _one_error(done, "unknown device 'gpu'")
    assert not (tmp_path / "m").exists()


def test_distill_model_checks_what_would_stop_its_export_before_the_run(tiny_bert_dir, tmp_path):
    args = ("model", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(tmp_path / "m"),
            "--teacher-bags", "0")  # fmt: skip
    _one_error(_cli(*args, "--dims", "10000"), "--dims 10000 is more than the teacher's", "dimensions")
    assert not (tmp_path / "m").exists()
    (tmp_path / "m" / "st").mkdir(parents=True)
    (tmp_path / "m" / "st" / "notes.txt").write_text("the user's")
    _one_error(_cli(*args), "holds files that distill did not export")
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["st"]


@pytest.mark.parametrize("model", ["/nowhere/model", "./nowhere", "models/nowhere/model"])
def test_a_model_folder_that_is_not_there_is_named_as_a_folder(tmp_path, model):
    """Not as a hub id to download: a path is no repository name."""
    _one_error(_cli(*_run_args(model, tmp_path / "out")), f"no model folder at {model}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("inside", ["", "runs/one"])
def test_a_run_is_never_written_into_its_model_s_folder(model_copy, inside):
    before = sorted(p.name for p in model_copy.iterdir())
    _one_error(_cli(*_run_args(model_copy, model_copy / inside)), "is inside the model folder")
    assert sorted(p.name for p in model_copy.iterdir()) == before


def test_a_gguf_file_the_model_folder_lacks_is_named(tiny_bert_dir, tmp_path):
    done = _cli(*_run_args(tiny_bert_dir, tmp_path / "out"), "--gguf-file", "model.gguf")
    _one_error(done, "--gguf-file model.gguf is not a file of the model folder")
    assert not (tmp_path / "out").exists()


def test_a_vocabulary_file_that_is_a_folder_is_named_as_one(tiny_bert_dir, tmp_path):
    _one_error(_cli(*_run_args(tiny_bert_dir, tmp_path / "out"), "--vocab-file", str(tmp_path)),
               f"vocabulary file {tmp_path} is not a regular file")  # fmt: skip
    _one_error(_cli(*_run_args(tiny_bert_dir, tmp_path / "out"), "--vocab-file", str(tmp_path / "none.txt")),
               "none.txt does not exist")  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_a_teacher_text_file_that_is_no_text_fails_before_the_model_loads(tiny_bert_dir, tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe not text")
    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    for name, problem in (("bad.txt", "is not UTF-8"), ("empty.txt", "has no text")):
        done = _cli(*_run_args(tiny_bert_dir, tmp_path / "out"), "--teacher", "--teacher-texts", str(tmp_path / name))
        _one_error(done, f"--teacher-texts file {tmp_path / name} {problem}")
    assert not (tmp_path / "out").exists()


def test_evaluate_checks_its_output_folder_and_teacher_before_scoring(tmp_path):
    """An --out it cannot write to, or a --teacher with no sentences to score, failed after minutes of scoring:
    here the vectors are not even read (they are missing) before the one line that says so."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    missing = str(tmp_path / "missing.txt")
    _one_error(_cli("evaluate", missing, "--benchmarks", "men", "--out", str(not_a_folder)), "cannot write")
    _one_error(_cli("evaluate", missing, "--benchmarks", "men", "--teacher", "minilm"), "add sts to --benchmarks")
    assert not_a_folder.read_text() == "x"
    _one_error(_cli("evaluate", missing, "--benchmarks", "men", "--out", str(tmp_path / "a" / "b")), "not found")
    assert not (tmp_path / "a").exists()  # the folders made for the report go with the refused command


def test_evaluate_scores_the_teacher_beside_the_vectors(finished_run, tiny_bert_dir, tmp_path):
    done = _cli("evaluate", str(finished_run), "--set", "layer1.pc", "--benchmarks", "sts", "--teacher",
                str(tiny_bert_dir), "--out", str(tmp_path), "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr
    labels = [s["label"] for s in json.loads((tmp_path / "report.json").read_text())["sentences"]]
    assert len(labels) == 2 and labels[1] == f"{tiny_bert_dir.name} (teacher)"
