"""Safe with any folder it is handed: nothing outside it is read, written or deleted by a name a manifest or a
folder gives, reuse is proven by content, commands on one run at once lose nothing, and every damaged or foreign
file is one line with exit 2."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import distill
from distill.corpus import _pieces, count_words, is_alphabetic, iter_lines, read_word_list
from distill.errors import ConfigError
from distill.evaluation.baselines import BaselineConfig, Method, reusable_baselines, train_baselines
from distill.files import is_replaceable
from distill.names import CHECKPOINT_PART, WORK_DIR
from distill.rundir import RunDir
from distill.serve.search import Searcher
from distill.vectors.keyed import to_keyed_vectors, write_word2vec

from .conftest import TINY_CORPUS
from .test_bad_input import _cli, _one_error


@pytest.fixture(scope="module")
def teacher_run(tiny_bert_dir, tmp_path_factory) -> Path:
    """A finished run with a recommended set, piece vectors and the teacher's sentence embeddings."""
    out = tmp_path_factory.mktemp("safety") / "run"
    distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), min_count=3, max_occurrences=5,
                best=True, teacher=True, pieces=True, progress=False)  # fmt: skip
    return out


@pytest.fixture
def run_copy(teacher_run, tmp_path) -> Path:
    return Path(shutil.copytree(teacher_run, tmp_path / "run"))


def _edit_manifest(run: Path, **changes: object) -> None:
    path = run / "manifest.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- 1. containment


def test_a_manifest_listing_names_outside_its_folder_deletes_nothing(run_copy, tiny_bert_dir, tmp_path):
    victim, absolute = tmp_path / "victim.txt", tmp_path / "absolute.txt"
    victim.write_text("mine")
    absolute.write_text("mine too")
    files = json.loads((run_copy / "manifest.json").read_text())["files"]
    _edit_manifest(run_copy, files=[*files, "../victim.txt", str(absolute)])
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(run_copy),
                "--min-count", "3", "--no-progress")  # fmt: skip
    _one_error(done, "not a plain file name")
    assert victim.read_text() == "mine" and absolute.read_text() == "mine too"


@pytest.mark.parametrize("name", ["..", "../victim", "/abs", "link"])
def test_exports_a_manifest_names_outside_its_folder_or_through_a_link_are_never_removed(run_copy, tiny_bert_dir,
                                                                                        tmp_path, name):  # fmt: skip
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "export.json").write_text(json.dumps({"files": []}))  # looks like a folder distill exported
    (run_copy / "link").symlink_to(victim)
    _edit_manifest(run_copy, exports=[name.replace("/abs", str(victim))])
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(run_copy),
                "--min-count", "3", "--no-progress")  # fmt: skip
    _one_error(done, "is a symbolic link" if name == "link" else "not a plain file name")
    assert (victim / "export.json").is_file() and (run_copy / "link").is_symlink()


def test_an_export_entry_is_read_within_the_runs_own_export_folder(run_copy, tiny_bert_dir, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "notes.txt").write_text("mine")
    args = ["run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(run_copy),
            "--min-count", "3", "--no-progress"]  # fmt: skip
    _edit_manifest(run_copy, exports=["export/../victim/notes.txt"])
    _one_error(_cli(*args), "not a plain file name")
    (run_copy / "export").symlink_to(victim)
    _edit_manifest(run_copy, exports=["export/notes.txt"])
    _one_error(_cli(*args), "is a symbolic link")
    assert (victim / "notes.txt").read_text() == "mine"


def test_what_was_exported_and_reported_from_a_run_goes_with_its_next_run(run_copy, tiny_bert_dir):
    """An export or report made from the vectors a new run replaces would describe vectors that are gone: the
    new run removes them (a file a user added stays), and a report without plots removes the plots before it."""
    distill.export(run_copy, "kv,model2vec")
    assert _cli("export", str(run_copy), "--format", "npy", "--out", str(run_copy / "mine.npy")).returncode == 0
    assert _cli("evaluate", str(run_copy), "--benchmarks", "simlex999").returncode == 0
    assert (run_copy / "scores.png").is_file()
    assert _cli("evaluate", str(run_copy), "--set", "best", "--benchmarks", "sts").returncode == 0
    assert not (run_copy / "scores.png").exists()  # the report it drew is replaced by one with no plot
    exports = json.loads((run_copy / "manifest.json").read_text())["exports"]
    best = RunDir(run_copy).resolve_set()
    assert exports == sorted([f"export/{best}.kv", f"export/{best}.model2vec", "mine.npy", "report.json",
                              "report.md", "scores.png"])  # fmt: skip
    (run_copy / "export" / "notes.txt").write_text("mine")
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(run_copy),
                "--min-count", "3", "--layers", "2", "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr
    left = {p.relative_to(run_copy).as_posix() for p in run_copy.rglob("*")}
    assert not left & {*exports, "layers.png"} and "export/notes.txt" in left


def test_a_corpus_folder_is_read_within_itself_not_through_a_link_to_a_file_outside(tiny_bert_dir, tmp_path):
    """A crafted corpus folder's link would carry another file's words (a secret's) into the vectors a user
    publishes: it is left out, said so once; named as its own --corpus, the same file is read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("zyzzyva quokka " * 20 + "\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "text.txt").write_text(TINY_CORPUS.read_text())
    (corpus / "notes.txt").symlink_to(secret)
    args = ["run", "--model", str(tiny_bert_dir), "--min-count", "1", "--no-progress", "--corpus", str(corpus)]
    done = _cli(*args, "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("1 link(s) to files outside it not read") == 1 and "notes.txt" in done.stderr
    assert "quokka" not in (tmp_path / "a" / "vocab.tsv").read_text()
    done = _cli(*args, "--corpus", str(corpus / "notes.txt"), "--out", str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    assert "quokka" in (tmp_path / "b" / "vocab.tsv").read_text()


def test_an_export_folder_that_links_outside_is_refused(run_copy, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "layer1.pc.npy").write_text("keep")
    (run_copy / "export").symlink_to(outside)
    _one_error(_cli("export", str(run_copy), "--set", "layer1.pc"), "symbolic link")
    assert [p.name for p in outside.iterdir()] == ["layer1.pc.npy"] and (
        outside / "layer1.pc.npy"
    ).read_text() == "keep"


def test_a_recommended_set_named_outside_the_run_writes_nothing_there(run_copy, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(run_copy / "layer1.pc.bin", elsewhere / "evil.bin")
    _edit_manifest(run_copy, best="../elsewhere/evil")
    _one_error(_cli("tune", str(run_copy), "--epochs", "1", "--no-progress"), "not a plain file name")
    assert [p.name for p in elsewhere.iterdir()] == ["evil.bin"]


def test_export_never_replaces_a_folder_holding_a_users_file(run_copy, tmp_path):
    mine = tmp_path / "exp" / "layer1.pc.npy" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    done = _cli("export", str(run_copy), "--set", "layer1.pc", "--format", "npy,kv", "--out", str(tmp_path / "exp"))
    _one_error(done, "holds files that distill did not write")
    assert mine.read_text() == "mine"


@pytest.mark.parametrize("into", ["the run", "an export"])
def test_files_exported_into_a_run_or_an_export_are_refused(run_copy, tmp_path, into):
    """`--out RUN --format word2vec` wrote the weighted vectors over the run's own layer1.pc.txt."""
    folder = run_copy
    if into == "an export":
        folder = tmp_path / "m"
        made = _cli("export", str(run_copy), "--set", "layer1.pc", "--format", "npy", "--out", str(folder))
        assert made.returncode == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    done = _cli("export", str(run_copy), "--set", "layer1.pc", "--format", "word2vec", "--out", str(folder))
    _one_error(done, "exports go in a folder of their own")
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_an_earlier_export_is_replaced_but_not_a_file_added_to_it(run_copy, tmp_path):
    args = ["export", str(run_copy), "--set", "layer1.pc", "--format", "npy", "--out", str(tmp_path / "e")]
    assert _cli(*args).returncode == 0
    assert is_replaceable(tmp_path / "e")
    assert _cli(*args).returncode == 0  # our own export: replaced
    (tmp_path / "e" / "added.txt").write_text("the user's")
    assert not is_replaceable(tmp_path / "e")
    _one_error(_cli(*args), "did not export")
    assert (tmp_path / "e" / "added.txt").read_text() == "the user's"


def test_a_resumable_work_folder_with_links_in_it_is_started_afresh(tiny_bert_dir, tmp_path):
    """A work folder whose fingerprint matches is reused as it stands: links planted in it would have the run
    write its next checkpoint, and its occurrences, into the files they point to outside the run."""
    from .encoding.test_scale import _cli as _run_cmd
    from .encoding.test_scale import _corpus, _kill_after_checkpoints

    corpus, out = _corpus(tmp_path, 2000), tmp_path / "out"
    cmd = _run_cmd(tiny_bert_dir, corpus, out, "--store", "disk")
    assert _kill_after_checkpoints(cmd, out / WORK_DIR, signal.SIGKILL, chunks=1)[0] == -9
    victims = {name: tmp_path / f"victim-{name}" for name in ("part", "layer")}
    for victim in victims.values():
        victim.write_text("the user's")
    (out / WORK_DIR / CHECKPOINT_PART).symlink_to(victims["part"])
    layer = out / WORK_DIR / "occurrences" / "layer1.npy"
    layer.unlink()
    layer.symlink_to(victims["layer"])
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "symbolic link" in again.stderr and "starting afresh" in again.stderr
    assert json.loads((out / "manifest.json").read_text())["resumed_from_chunk"] is None
    assert all(victim.read_text() == "the user's" for victim in victims.values())


def test_evaluate_writes_its_report_into_the_run_not_beside_it(run_copy, tmp_path):
    (tmp_path / "report.md").write_text("a report of the user's")
    done = _cli("evaluate", str(run_copy), "--set", "layer1.pc", "--benchmarks", "ws353", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert (run_copy / "report.md").is_file() and (tmp_path / "report.md").read_text() == "a report of the user's"


def test_a_run_whose_model_was_moved_says_so_and_what_may_be_done_without_it(run_copy, tmp_path):
    """The tokenizer's loader took the missing folder for a hub id ("Repo id must be in the form ..."), derive
    was told to use --oov pieces, an option it does not have, and neighbors of a known word needed the tokenizer."""
    data = json.loads((run_copy / "manifest.json").read_text())
    data["model"]["source"] = str(tmp_path / "moved")
    (run_copy / "manifest.json").write_text(json.dumps(data))
    gone = f"by the run's model, {tmp_path / 'moved'}, which is not there any more; put it back"
    _one_error(_cli("neighbors", str(run_copy), "zzqqxx"), f"words the set lacks are split into pieces {gone}")
    known = (run_copy / "vocab.tsv").read_text().split()[0]
    done = _cli("neighbors", str(run_copy), known, "-k", "2")  # needs no tokenizer: it is opened for unknown words
    assert done.returncode == 0 and done.stdout.startswith(f"{known}: "), done.stderr
    done = _cli("derive", str(run_copy), "--layers", "1", "--pooling", "pc", "--alone-weight", "0.5", "--no-progress")
    _one_error(done, f"words are read alone {gone}, or derive without --alone-weight and --language-words")


def test_a_report_of_other_vectors_never_goes_into_a_run(run_copy, tmp_path):
    """`evaluate OTHER --out RUN` replaced the run's own report.md with one of other vectors."""
    other = tmp_path / "other.txt"
    shutil.copy(run_copy / "layer1.pc.txt", other)
    done = _cli("evaluate", str(run_copy), "--set", "layer1.pc", "--benchmarks", "ws353", "--no-progress")
    assert done.returncode == 0, done.stderr
    own = (run_copy / "report.md").read_text()
    args = ["--benchmarks", "ws353", "--no-progress", "--out", str(run_copy)]
    _one_error(_cli("evaluate", str(other), *args), "reports of other vectors go in a folder of their own")
    assert (run_copy / "report.md").read_text() == own
    done = _cli("evaluate", str(run_copy / "layer1.pc.txt"), *args)  # the run's own file: where its report goes
    assert done.returncode == 0, done.stderr


# -- 2. reuse keyed by content


def test_baselines_are_reused_only_for_the_same_words_and_corpus(tmp_path):
    corpus = tmp_path / "c.txt"
    shutil.copy(TINY_CORPUS, corpus)
    words = ["the", "king", "queen", "farmer"]
    (tmp_path / "words.txt").write_text("\n".join(words) + "\n")
    config = BaselineConfig(corpus=(str(corpus),), out=tmp_path / "b", methods=(Method.WORD2VEC,),
                            vocab=str(tmp_path / "words.txt"), dim=8, epochs=1, workers=1, progress=False)  # fmt: skip
    train_baselines(config)
    files = [{"path": str(corpus), "sha256": distill.files.sha256_file(corpus)}]
    assert reusable_baselines(tmp_path / "b", config, words, files)
    assert not reusable_baselines(tmp_path / "b", config, [*words, "sheep"], files)  # a new vocabulary
    assert not reusable_baselines(tmp_path / "b", config, words, [{"path": str(corpus), "sha256": "0" * 64}])
    assert not reusable_baselines(tmp_path / "b", BaselineConfig(**{**config.__dict__, "seed": 1}), words, files)

    assert not reusable_baselines(tmp_path / "b", BaselineConfig(**{**config.__dict__, "epochs": 2}), words, files)


def test_baselines_trained_again_on_other_words_leave_no_file_of_the_earlier_ones(tmp_path):
    config = BaselineConfig(corpus=(str(TINY_CORPUS),), out=tmp_path / "b", methods=(Method.FASTTEXT, Method.WORD2VEC),
                            min_count=1, dim=8, epochs=1, workers=1, progress=False)  # fmt: skip
    train_baselines(config)
    same = BaselineConfig(**{**config.__dict__, "methods": (Method.GLOVE,), "glove_epochs": 1})
    train_baselines(same)  # same words and corpus: the earlier methods stay, listed
    assert sorted(p.name for p in (tmp_path / "b").glob("*.vec.txt")) == [
        "fasttext.vec.txt", "glove.vec.txt", "word2vec.vec.txt"]  # fmt: skip
    train_baselines(BaselineConfig(**{**same.__dict__, "min_count": 3}))  # other words
    listed = json.loads((tmp_path / "b" / "baselines.json").read_text())["files"]
    assert sorted(p.name for p in (tmp_path / "b").glob("*.vec.txt")) == sorted(listed) == ["glove.vec.txt"]


@pytest.mark.parametrize("holding", ["manifest.json", "export.json", "word2vec.vec.txt"])
def test_baselines_refuse_a_run_an_export_or_a_file_they_did_not_write(tmp_path, holding):
    out = tmp_path / "folder"
    out.mkdir()
    (out / holding).write_text("the user's")
    done = _cli("baselines", "--corpus", str(TINY_CORPUS), "--out", str(out), "--methods", "word2vec", "--dims", "8",
                "--no-progress")  # fmt: skip
    _one_error(done)
    assert [p.name for p in out.iterdir()] == [holding] and (out / holding).read_text() == "the user's"


def test_baselines_never_read_or_write_through_a_linked_record(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text('{"files": {}, "built_from": {}}')
    out = tmp_path / "b"
    out.mkdir()
    (out / "baselines.json").symlink_to(outside)
    done = _cli("baselines", "--corpus", str(TINY_CORPUS), "--out", str(out), "--methods", "word2vec", "--dims", "8",
                "--no-progress")  # fmt: skip
    _one_error(done, "symbolic link")
    assert outside.read_text() == '{"files": {}, "built_from": {}}' and [p.name for p in out.iterdir()] == [
        "baselines.json"
    ]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_saved_index_of_other_vectors_is_built_again(tmp_path, rng, kind):
    words = [f"w{i}" for i in range(50)]
    path = tmp_path / "v.txt"
    write_word2vec(to_keyed_vectors(words, rng.standard_normal((50, 8)).astype(np.float32)), path)
    Searcher.open(path, kind=kind)  # builds and saves the index beside the file
    new = rng.standard_normal((50, 8)).astype(np.float32)  # same words, other vectors
    write_word2vec(to_keyed_vectors(words, new), path)
    found = Searcher.open(path, kind=kind).neighbors(["w0"], k=1)[0]
    unit = new / np.linalg.norm(new, axis=1, keepdims=True)
    best = words[int(np.argsort(-(unit[1:] @ unit[0]))[0]) + 1]
    assert found is not None and found[0][0] == best


def test_a_checkpoint_of_a_model_changed_in_place_is_not_reused(tiny_bert_dir, tmp_path):
    from distill.config import RunConfig
    from distill.workdir import fingerprint

    model = Path(shutil.copytree(tiny_bert_dir, tmp_path / "m"))
    config = RunConfig(model=str(model), corpus=(str(TINY_CORPUS),))
    before = fingerprint(config, config.corpus, "v")
    config_json = json.loads((model / "config.json").read_text())
    config_json["layer_norm_eps"] = 1e-5
    (model / "config.json").write_text(json.dumps(config_json))
    assert fingerprint(config, config.corpus, "v") != before


# -- 3. commands on one run at once


def test_three_derives_at_once_each_list_their_set(run_copy):
    before = set(json.loads((run_copy / "manifest.json").read_text()).get("derived") or {})
    recipes = [["--remove-top", "0"], ["--remove-top", "1"], ["--whiten"]]
    procs = [subprocess.Popen([sys.executable, "-m", "distill", "derive", str(run_copy), *r], stderr=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for r in recipes]  # fmt: skip
    for proc in procs:
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    manifest = RunDir(run_copy).check_complete()  # every file of every set listed, none unlisted
    assert len(set(manifest["derived"]) - before) == 3
    assert not (run_copy / ".distill.lock").exists()


def test_the_run_lock_waits_and_lets_go(run_copy):
    run, order = RunDir(run_copy), []
    with run.locked():
        waiter = threading.Thread(target=lambda: run.update_manifest([], lambda m: order.append("second")))
        waiter.start()
        waiter.join(0.5)
        order.append("first")
    waiter.join(10)
    assert order == ["first", "second"] and not (run_copy / ".distill.lock").exists()


def test_the_thread_holding_the_run_lock_may_change_the_manifest_and_a_second_run_is_still_refused(run_copy):
    run = RunDir(run_copy)
    holder = run.claim()
    try:
        run.update_manifest([], lambda m: m.setdefault("derived", {}).update(inner={"recipe": "x"}))  # no deadlock
        assert (run_copy / ".distill.lock").exists()  # the inner hold let nothing go
        with pytest.raises(ConfigError, match="another distill run is writing to"):
            run.claim()
        other = threading.Thread(target=lambda: run.update_manifest([]))  # another thread waits, as before
        other.start()
        other.join(0.5)
        assert other.is_alive()
    finally:
        holder.release()
    other.join(10)
    assert not other.is_alive() and not (run_copy / ".distill.lock").exists()
    assert "inner" in run.manifest()["derived"]


# -- 4. honest held-out claims


def test_a_model_tuned_on_the_sts_sentences_claims_no_held_out_year():
    from distill.evaluation.sentences import SentenceScore, saw_sts, sentence_markdown
    from distill.paths import default_corpus
    from distill.production import _years

    sts = {"corpus": {"files": [{"path": str(default_corpus()), "sha256": "x"}]}}
    other = {"corpus": {"files": [{"path": "/data/gutenberg.txt", "sha256": "y"}]}}
    assert saw_sts(sts) and not saw_sts(other)
    assert "no year is held out" in _years(sts)[0] and "held out" not in _years(sts)[2]
    assert _years(other)[2] == "held out 15-16"
    per_year = {year: 70.0 for year in range(2012, 2017)}
    seen = SentenceScore("tuned on STS", per_year, 1000.0, 10, {"saw_sts": True})
    table = sentence_markdown([seen, SentenceScore("other", per_year, 1000.0, 10, {})])
    assert "| 70.0 (seen) |" in table and table.count("(seen)") == 2  # the row, and the note saying what it means


# -- 5. words as people write them


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # Devanagari vowel signs and virama stay in the word
        ("مَرْحَبًا بِكُم", ["مَرْحَبًا", "بِكُم"]),  # Arabic with vowel marks
        ("cafe\u0301 naïve", ["café", "naïve"]),  # decomposed Latin is read composed (NFC)
        ("東京 漢字", ["東京", "漢字"]),
        ("I ❤️ 😀 tea", ["I", "tea"]),  # emoji separate words, as punctuation does
        ("\ufeffking", ["king"]),  # a byte-order mark is no part of the first word
    ],
)
def test_words_as_people_write_them(tmp_path, text, words):
    path = tmp_path / "c.txt"
    path.write_text(text + "\n", encoding="utf-8")
    assert list(count_words(iter_lines([str(path)]), lowercase=False)) == words
    assert all(is_alphabetic(w) for w in words)


def test_a_vocabulary_file_with_a_byte_order_mark_keeps_its_first_word(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\ufeffking\nqueen\ncafe\u0301\n".encode())
    assert read_word_list(path, lowercase=False) == ["king", "queen", "café"]


# -- 6. bounded resources


def test_a_long_line_is_read_in_bounded_pieces_cut_at_white_space():
    line = ("word " * 5000 + "x" * 30000 + "é" * 9000).encode() + b"\n" + b"next line\n"
    pieces = list(_pieces(io.BytesIO(line), limit=4096))
    assert max(len(p) for p, _ in pieces) <= 4096
    assert b"".join(p for p, _ in pieces) == line
    assert [p for p, end in pieces if end][-1] == b"next line\n"
    for piece, _ in pieces:
        piece.decode("utf-8")  # never cut inside a character
        assert not piece.startswith(b"ord ")  # never inside a word where white space allowed a cut


def test_a_tokenizer_larger_than_the_embedding_table_is_refused(tiny_bert_dir, tmp_path):
    from transformers import AutoTokenizer

    model = Path(shutil.copytree(tiny_bert_dir, tmp_path / "m"))
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.add_tokens([f"extra{i}" for i in range(500)])
    tokenizer.save_pretrained(model)
    done = _cli("run", "--model", str(model), "--corpus", str(TINY_CORPUS), "--out", str(tmp_path / "o"),
                "--min-count", "3", "--no-progress")  # fmt: skip
    _one_error(done, "embeddings", "ids past its table")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_corpus_is_read_once(tiny_bert_dir, tmp_path):
    fifo = tmp_path / "corpus"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(TINY_CORPUS.read_bytes()))
    writer.start()
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(fifo), "--out", str(tmp_path / "o"),
                "--min-count", "3", "--max-occurrences", "5", "--no-progress", timeout=120)  # fmt: skip
    writer.join(10)
    assert done.returncode == 0, done.stderr
    assert RunDir(tmp_path / "o").check_complete()["vocabulary"]["size"] > 10


# -- 7. one line for every damaged or foreign file


@pytest.mark.parametrize(
    ("target", "command", "expected"),
    [
        ("layer1.pc.bin", ["neighbors", "{run}", "king", "--set", "layer1.pc"], "truncated"),
        ("layer1.pieces.npz", ["neighbors", "{run}", "zzyzx", "--set", "layer1.pc"], "truncated or damaged"),
        ("vocab.tsv", ["export", "{run}", "--set", "layer1.pc", "--format", "npy"], "damaged"),
        ("teacher.npz", ["tune", "{run}", "--epochs", "1", "--no-progress"], "truncated or damaged"),
    ],
)
def test_a_truncated_file_of_a_run_is_one_line(run_copy, target, command, expected):
    path = run_copy / target
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if target != "vocab.tsv" else b"king 12\n")
    _one_error(_cli(*[c.format(run=run_copy) for c in command]), expected)


@pytest.mark.parametrize(
    ("fmt", "damaged", "expected"),
    [
        ("model2vec", "model.safetensors", "cannot load"),
        ("sentence-transformers", "model.safetensors", "cannot load"),
        ("model2vec", "config.json", "the model folder is damaged"),
    ],
)
def test_a_damaged_exported_model_is_one_line(run_copy, tmp_path, fmt, damaged, expected):
    folder = tmp_path / fmt
    assert _cli("export", str(run_copy), "--set", "best", "--format", fmt, "--out", str(folder)).returncode == 0
    path = next(folder.rglob(damaged))
    path.write_bytes(path.read_bytes()[:64])
    _one_error(_cli("evaluate", str(folder), "--benchmarks", "sts", "--no-progress"), expected, str(folder))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"type": "modeling_mine.Mine"}, "not one of sentence-transformers' own"),
        ({"path": "../outside"}, "outside the folder; distill reads only"),
    ],
)
def test_a_sentence_transformers_folder_runs_none_of_its_own_code(run_copy, tmp_path, change, expected):
    """sentence-transformers before 6.0 imports a module class a local folder's modules.json names from the
    folder's own code: a crafted folder would run it; and a module path may lead out of the folder."""
    folder = tmp_path / "st"
    assert _cli("export", str(run_copy), "--set", "best", "--format", "sentence-transformers", "--out",
                str(folder)).returncode == 0  # fmt: skip
    marker = tmp_path / "ran"
    (folder / "modeling_mine.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass Mine: pass\n")
    modules = json.loads((folder / "modules.json").read_text())
    modules[0].update(change)
    (folder / "modules.json").write_text(json.dumps(modules))
    _one_error(_cli("evaluate", str(folder), "--benchmarks", "sts", "--no-progress"), expected, str(folder))
    assert not marker.exists()


def test_a_set_tuned_again_into_other_vectors_takes_its_exports_with_it(run_copy):
    """``SET.tuned`` keeps its name whatever the tuning's options: an export of the earlier tuning would describe
    vectors that are gone. The same vectors again keep it; another set's export stays."""
    best = RunDir(run_copy).resolve_set()
    tune = ["tune", str(run_copy), "--set", best, "--epochs", "2", "--no-progress"]
    assert _cli(*tune).returncode == 0
    for name in (best, f"{best}.tuned"):
        assert _cli("export", str(run_copy), "--set", name, "--format", "kv").returncode == 0
    tuned_kv, untuned_kv = run_copy / "export" / f"{best}.tuned.kv", run_copy / "export" / f"{best}.kv"
    assert _cli(*tune).returncode == 0  # the same options: the same vectors to the bit
    assert tuned_kv.is_file() and untuned_kv.is_file()
    assert _cli(*tune, "--blend", "0.25").returncode == 0
    assert not tuned_kv.exists() and untuned_kv.is_file()
    manifest = json.loads((run_copy / "manifest.json").read_text())
    assert manifest["exports"] == [f"export/{best}.kv"] and manifest["exported_from"] == {f"export/{best}.kv": best}


def test_a_run_is_not_written_into_an_export(run_copy, tiny_bert_dir, tmp_path):
    """A run's files (and its lock) in an export folder would leave it neither: distill export could no longer
    replace it."""
    folder = tmp_path / "m2v"
    assert _cli("export", str(run_copy), "--format", "model2vec", "--out", str(folder)).returncode == 0
    before = _snapshot(folder)
    done = _cli("run", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(folder),
                "--min-count", "3", "--no-progress")  # fmt: skip
    _one_error(done, "is an export", "not a run folder")
    assert _snapshot(folder) == before and is_replaceable(folder)


def test_exports_given_where_a_run_is_expected_are_named_for_what_they_are(run_copy, tmp_path):
    out = tmp_path / "e"
    assert (
        _cli("export", str(run_copy), "--set", "layer1.pc", "--format", "kv,npy,word2vec", "--out", str(out)).returncode
        == 0
    )
    _one_error(_cli("neighbors", str(out / "layer1.pc.kv"), "king"), "gensim's native format, a pickle")
    _one_error(_cli("neighbors", str(out / "layer1.pc.npy"), "king"), "is an export", "not a run folder")
    _one_error(_cli("neighbors", str(out), "king"), "is no run folder", str(out / "layer1.pc.bin"))
    done = _cli("neighbors", str(out / "layer1.pc.bin"), "king", "-k", "1")
    assert done.returncode == 0 and done.stdout.startswith("king: "), done.stderr


def test_a_vector_file_beside_another_programs_manifest_is_scored(run_copy, tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    shutil.copy(run_copy / "layer1.pc.txt", folder)
    for text in ("{not json", '{"model": 3}'):
        (folder / "manifest.json").write_text(text)
        done = _cli("evaluate", str(folder / "layer1.pc.txt"), "--benchmarks", "ws353", "--no-progress")
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_a_truncated_index_is_built_again(run_copy):
    path = run_copy / "layer1.pc.faiss"
    path.write_bytes(path.read_bytes()[:100])
    done = _cli("neighbors", str(run_copy), "king", "--set", "layer1.pc", "-k", "2")
    assert done.returncode == 0 and done.stdout.startswith("king: "), done.stderr


@pytest.mark.parametrize(
    "changes",
    [
        {"layers": "1"},
        {"model": {"name": 3}},
        {"vocabulary": None},
        {"files": ["/etc/passwd"]},
        {"best": 7},
        {"derived": {"../x": {}}},
        {"corpus": {"files": "x", "lines": 1, "words": 1}},
    ],
)
def test_a_manifest_with_fields_of_the_wrong_kind_is_one_line(run_copy, changes):
    _edit_manifest(run_copy, **changes)
    _one_error(_cli("neighbors", str(run_copy), "king"), "manifest.json")


def test_a_damaged_analysis_is_one_line(run_copy):
    (run_copy / "analysis.json").write_text('{"layers": {"1": []}}')
    _one_error(_cli("analyze", str(run_copy)), "analysis.json is damaged")


def test_a_pickle_bearing_npz_is_refused_in_one_line(run_copy):
    np.savez(run_copy / "layer1.pieces.npz", vectors=np.array([object()], dtype=object), counts=np.zeros(3))
    _one_error(_cli("neighbors", str(run_copy), "zzyzx", "--set", "layer1.pc"), "pickled objects")


def test_a_run_folder_that_cannot_be_written_is_one_line(run_copy):
    (run_copy / ".distill.lock").mkdir()  # cannot be opened as the lock file: as a read-only folder is
    _one_error(_cli("derive", str(run_copy), "--whiten"), "cannot write")
    done = _cli("neighbors", str(run_copy), "king", "--index", "hnsw", "--set", "layer1.pc")
    assert done.returncode == 0 and "king: " in done.stdout, done.stderr  # the index is only not saved


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "{run}", "--seed", "-1"],
        ["baselines", "--corpus", "{corpus}", "--seed", "-1"],
        ["baselines", "--corpus", "{corpus}", "--dims", "0"],
        ["baselines", "--corpus", "{corpus}", "--dim", "0"],
        ["tune", "{run}", "--learning-rate", "nan"],
    ],
)
def test_option_values_that_cannot_work_exit_2_without_a_traceback(run_copy, args):
    done = _cli(*[a.format(run=run_copy, corpus=TINY_CORPUS) for a in args])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_load_reads_a_glove_file_and_names_a_bad_layer(run_copy, tmp_path):
    glove = tmp_path / "g.txt"
    glove.write_text("king 1.0 2.0\nqueen 1.5 2.5\n")
    assert distill.load(glove)["queen"].tolist() == [1.5, 2.5]
    with pytest.raises(ConfigError, match="not a layer number"):
        distill.load(run_copy, layer="one")  # type: ignore[arg-type]


# -- relative paths, revisions, words the tokenizer drops


def test_a_run_made_with_a_relative_model_path_is_queried_from_anywhere(tiny_bert_dir, tmp_path):
    shutil.copytree(tiny_bert_dir, tmp_path / "model")
    subprocess.run([sys.executable, "-m", "distill", "run", "--model", "model", "--corpus", str(TINY_CORPUS), "--out",
                    "out", "--min-count", "3", "--max-occurrences", "5", "--no-progress"], cwd=tmp_path,
                   check=True, capture_output=True)  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "distill", "neighbors", str(tmp_path / "out"), "zzyzx", "--oov",
                           "alone", "-k", "2"], cwd=elsewhere, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("zzyzx (read alone"), done.stderr


def test_a_word_the_tokenizer_drops_has_no_vector_rather_than_nan(run_copy):
    from distill.serve.alone import AloneFallback

    fallback = AloneFallback.open(run_copy, "layer1.pc")
    assert fallback is not None and fallback.vector("\u200b") is None
    assert np.isfinite(fallback.vector("king")).all()


def test_words_alone_load_the_model_in_float32_on_a_cpu(run_copy):
    import torch

    from distill.serve.alone import AloneFallback, _encoder

    _encoder.cache_clear()
    model = json.loads((run_copy / "manifest.json").read_text())["model"]
    _edit_manifest(run_copy, model={**model, "dtype": "float16"})
    fallback = AloneFallback.open(run_copy, "layer1.pc")
    assert fallback is not None
    expected = torch.float32 if not torch.cuda.is_available() else fallback.encoder.dtype
    assert fallback.encoder.dtype == expected
    _encoder.cache_clear()


def test_piece_vectors_load_the_tokenizer_at_the_recorded_revision(run_copy, monkeypatch):
    import transformers

    from distill.serve.pieces import PieceVectors

    seen = {}
    real = transformers.AutoTokenizer.from_pretrained

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **{k: v for k, v in kwargs.items() if k != "revision"})

    model = json.loads((run_copy / "manifest.json").read_text())["model"]
    _edit_manifest(run_copy, model={**model, "revision": "abc123"})
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", spy)
    assert PieceVectors.open(run_copy, 1) is not None and seen["revision"] == "abc123"


def test_a_full_disk_during_the_model2vec_export_is_one_line_and_leaves_nothing(run_copy, tmp_path, monkeypatch):
    from model2vec import StaticModel
    from safetensors import SafetensorError

    from distill.errors import OutputError
    from distill.serve.export import export_run
    from distill.serve.formats import Format

    def full(self, *args, **kwargs):
        raise SafetensorError("No space left on device (os error 28)")

    monkeypatch.setattr(StaticModel, "save_pretrained", full)
    with pytest.raises(OutputError, match="is the disk full"):
        export_run(run_copy, vector_set="layer1.pc", formats=[Format.MODEL2VEC], out=tmp_path / "m2v")
    assert not any(p.name.startswith(".m2v") or p.name == "m2v" for p in tmp_path.iterdir())
