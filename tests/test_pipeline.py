import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gensim.models import KeyedVectors

import distill
from distill.errors import ConfigError, OutputError
from distill.files import sha256_file
from distill.vectors.faiss_index import read_faiss

from .conftest import DATA, TINY_CORPUS


def _run(model_dir, out, **options):
    defaults = {"corpus": [str(TINY_CORPUS)], "min_count": 2, "max_occurrences": 5, "progress": False}
    return distill.run(model=str(model_dir), out=str(out), **{**defaults, **options})


@pytest.fixture(scope="module")
def bert_run(tmp_path_factory, tiny_bert_dir):
    return _run(tiny_bert_dir, tmp_path_factory.mktemp("run"), layers="0-2", pooling="pc,mean")


def test_run_writes_every_format_and_they_load(bert_run):
    out = bert_run.out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["layers"] == [0, 1, 2] and manifest["pooling"] == ["pc", "mean"]
    assert len(manifest["files"]) == 1 + 3 * 2 * 4 + 3  # vocab.tsv, 4 files per layer and pooling, 3 of pieces
    assert [f for f in manifest["files"] if "pieces" in f] == [f"layer{i}.pieces.npz" for i in range(3)]
    assert manifest["config"]["pieces"] is True  # the default, resolved
    vocab = [line.split("\t") for line in (out / "vocab.tsv").read_text().splitlines()]
    assert [w for w, _ in vocab] == bert_run[1].index_to_key
    assert [int(c) for _, c in vocab] == [bert_run[1].get_vecattr(w, "count") for w, _ in vocab]
    for name in ("layer1.pc", "layer2.mean"):
        text = KeyedVectors.load_word2vec_format(str(out / f"{name}.txt"))
        binary = KeyedVectors.load_word2vec_format(str(out / f"{name}.bin"), binary=True)
        kv = bert_run.vectors[name]
        assert text.index_to_key == binary.index_to_key == kv.index_to_key
        np.testing.assert_allclose(binary.vectors, kv.vectors)
        np.testing.assert_array_equal(text.vectors, kv.vectors)
        index, words = read_faiss(out / f"{name}.faiss")
        assert words == kv.index_to_key
        _, ids = index.search(kv.get_normed_vectors(), 1)
        np.testing.assert_array_equal(ids[:, 0], np.arange(len(words)))
    assert not list(out.glob(".*"))  # no temporary file or work folder left


def test_a_run_of_binary_files_alone_serves_every_command(bert_run, tiny_bert_dir, tmp_path):
    """``--formats bin`` (a run of many layers on a GPU writes far fewer bytes): each set is its binary file, the
    same bytes as a run of all three formats, and load, evaluate and neighbors read it."""
    from distill.serve.search import Searcher

    out = tmp_path / "bin"
    _run(tiny_bert_dir, out, layers="0-2", pooling="pc,mean", formats="bin", best=True)
    manifest = json.loads((out / "manifest.json").read_text())
    sets = [f for f in manifest["files"] if f.startswith("layer") and "pieces" not in f]
    assert sets and all(f.endswith(".bin") for f in sets) and len(sets) == 3 * 2 + 1  # and the recommended set
    assert sorted(p.name for p in out.iterdir() if p.name.endswith((".txt", ".faiss"))) == []
    assert manifest["config"]["formats"] == ["bin"]
    for name in ("layer1.pc", "layer2.mean"):
        assert (out / f"{name}.bin").read_bytes() == (bert_run.out / f"{name}.bin").read_bytes()
    rows = distill.evaluate([out], benchmarks=["simlex999"], oov=["standard"])
    assert len(rows) == 3 * 2 + 1 and {r.path.rsplit(".", 1)[-1] for r in rows} == {"bin"}
    # one file and comma lists, as the command line takes them: a string is not a sequence of paths or names
    one = distill.evaluate(out / "layer1.pc.bin", benchmarks="simlex999,ws353", oov="standard")
    assert [r.path for r in one] == [str(out / "layer1.pc.bin")] and len(one[0].scores) == 2
    assert repr(next(r.scores for r in rows if r.path == one[0].path)[0]) == repr(one[0].scores[0])  # nan == nan
    written = distill.export(out, "npy,kv", vector_set="layer1.pc", out=tmp_path / "e")
    assert sorted(p.name for p, _ in written) == ["layer1.pc.kv", "layer1.pc.npy"]
    for bad, choices in (({"scale": "row"}, "vector, dimension, table"), ({"weighting": "idf"}, "auto, none, sif")):
        with pytest.raises(ConfigError, match=choices):  # named with its choices, as the command line does
            distill.export(out, "npy", vector_set="layer1.pc", out=tmp_path / "bad", **bad)
        assert not (tmp_path / "bad").exists()
    searcher = Searcher.open(out, layer=1, pooling="pc")  # no index was written: built, as for any vector file
    word = searcher.words[0]
    assert searcher.neighbors([word], k=2)[0][0][0] == distill.load(out, layer=1).most_similar(word, topn=1)[0][0]
    with pytest.raises(ConfigError, match="must include bin"):
        _run(tiny_bert_dir, tmp_path / "txt", formats="txt,faiss")


def test_manifest_records_how_vectors_were_made(bert_run):
    m = bert_run.manifest
    assert m["corpus"]["files"][0]["sha256"] == sha256_file(TINY_CORPUS)
    assert m["vocabulary"]["lowercase"] is True  # MiniLM's tokenizer is uncased
    assert m["vocabulary"]["size"] == len(bert_run[1].index_to_key)
    assert m["occurrences"]["encoded"] == m["occurrences"]["planned"]
    assert m["occurrences"]["per_word_max"] == 5
    assert m["model"]["layers_run"] == 2 and m["config"]["seed"] == 0
    assert {"torch", "transformers", "gensim"} <= set(m["versions"])
    steps = {k: v for k, v in m["timings_seconds"].items() if k not in ("total", "forward")}  # forward: within encode
    assert set(steps) == {"plan", "claim", "load_model", "vocabulary", "encode", "close", "reduce_and_write"}
    assert 0 < sum(steps.values()) <= m["timings_seconds"]["total"]  # every step timed apart, none counted twice


def test_api_indexing_and_load(bert_run):
    assert bert_run[1] is bert_run.vectors["layer1.pc"]
    assert bert_run[2, "mean"] is bert_run.vectors["layer2.mean"]
    loaded = distill.load(bert_run.out, layer=1)
    np.testing.assert_allclose(loaded.vectors, bert_run[1].vectors)
    assert distill.load(bert_run.out / "layer2.mean.txt").index_to_key == bert_run[2, "mean"].index_to_key


def _short_corpus(tmp_path: Path) -> Path:
    """The tiny corpus's lines that the model takes whole (no windows)."""
    corpus = tmp_path / "short.txt"
    corpus.write_text("".join(line for line in TINY_CORPUS.read_text().splitlines(True) if len(line) < 200))
    return corpus


def _by_hand(model_dir: Path, corpus: Path, word: str, layer: int, context_share: float = 0.0) -> np.ndarray:
    """Each occurrence of ``word`` encoded by hand: the mean of its pieces' states in ``layer``, plus
    ``context_share`` times the mean state of its line's text tokens."""
    import torch

    from distill.corpus import iter_lines, word_spans
    from distill.encoders import load_encoder

    loaded = load_encoder("tiny", str(model_dir), (layer,))
    rows = []
    for text in iter_lines([str(corpus)]):
        enc = loaded.tokenizer([text], return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].numpy()
        with torch.no_grad():
            hidden = loaded.model(**enc, output_hidden_states=True).hidden_states[layer][0]
        context = hidden[torch.from_numpy(offsets[:, 1] > offsets[:, 0])].mean(0)
        for s, e in word_spans(text):
            if text[s:e].lower() == word:
                mask = (offsets[:, 0] < e) & (offsets[:, 1] > s) & (offsets[:, 1] > offsets[:, 0])
                rows.append((hidden[torch.from_numpy(mask)].mean(0) + context_share * context).numpy())
    return np.array(rows)


def test_pc_vectors_are_the_svd_of_the_encoded_occurrences(tiny_bert_dir, tmp_path):
    """Re-encode one word's occurrences by hand and compare with numpy's SVD."""
    from distill.reduction import first_principal_component

    corpus = _short_corpus(tmp_path)
    result = _run(tiny_bert_dir, tmp_path, corpus=[str(corpus)], layers="2", max_occurrences=1000, pooling="pc,mean")
    # every occurrence of "castle" is used (cap above its count): its mean and PC follow from them
    rows = _by_hand(tiny_bert_dir, corpus, "castle", 2)
    assert len(rows) > 5
    np.testing.assert_allclose(result[2, "mean"]["castle"], rows.mean(0), atol=1e-5)
    np.testing.assert_allclose(result[2]["castle"], first_principal_component(rows), atol=1e-4)


def test_a_context_share_adds_that_share_of_each_occurrences_sentence_mean(tiny_bert_dir, tmp_path):
    corpus = _short_corpus(tmp_path)
    result = _run(tiny_bert_dir, tmp_path, corpus=[str(corpus)], layers="1,2", max_occurrences=1000, pooling="mean",
                  context_share=0.5)  # fmt: skip
    for layer in (1, 2):
        plain, shared = (_by_hand(tiny_bert_dir, corpus, "castle", layer, share).mean(0) for share in (0, 0.5))
        np.testing.assert_allclose(result[layer, "mean"]["castle"], shared, atol=1e-5)
        assert not np.allclose(shared, plain, atol=1e-3)  # the share moved it
    assert result.manifest["config"]["context_share"] == 0.5


def test_same_seed_same_vectors_other_seed_other_sample(tiny_bert_dir, tmp_path):
    a = _run(tiny_bert_dir, tmp_path / "a", layers="1", seed=3)
    b = _run(tiny_bert_dir, tmp_path / "b", layers="1", seed=3)
    c = _run(tiny_bert_dir, tmp_path / "c", layers="1", seed=4)
    np.testing.assert_array_equal(a[1].vectors, b[1].vectors)
    assert (a.out / "layer1.pc.bin").read_bytes() == (b.out / "layer1.pc.bin").read_bytes()
    assert not np.allclose(a[1]["king"], c[1]["king"])  # "king" has more than 5 occurrences: resampled


def test_bfloat16_on_an_explicit_cpu_is_close_to_float32(tiny_bert_dir, tmp_path):
    full = _run(tiny_bert_dir, tmp_path / "f32", layers="1,2", device="cpu", dtype="float32")
    half = _run(tiny_bert_dir, tmp_path / "bf16", layers="1,2", device="cpu", dtype="bfloat16")
    assert half.manifest["model"]["dtype"] == "bfloat16"
    for layer in (1, 2):
        a, b = full[layer], half[layer]
        assert a.index_to_key == b.index_to_key
        cos = (a.vectors * b.vectors).sum(1) / np.linalg.norm(a.vectors, axis=1) / np.linalg.norm(b.vectors, axis=1)
        assert cos.min() > 0.99, cos.min()  # bfloat16 keeps 8 bits of mantissa
        assert not np.array_equal(a.vectors, b.vectors)  # the weights really ran in bfloat16


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_causal_models_run_end_to_end(request, family, tmp_path):
    model_dir = request.getfixturevalue(f"tiny_{family}_dir")
    result = _run(model_dir, tmp_path, layers="all", max_length=24, stride=4)
    m = result.manifest
    assert m["encoding"]["long_sentences"] > 0  # the long line was split into windows
    assert m["occurrences"]["not_aligned"] == 0
    assert m["vocabulary"]["lowercase"] is False  # cased tokenizers keep case
    assert {"The", "the"} <= set(result[1].key_to_index)


def test_vocabulary_word_never_seen_is_dropped_and_counted(tiny_bert_dir, tmp_path):
    result = _run(tiny_bert_dir, tmp_path, vocab_file=str(DATA / "word_list.txt"))
    assert set(result[1].index_to_key) == {"king", "queen", "river", "unbelievable"}
    assert result.manifest["vocabulary"]["dropped"] == {"not in corpus": 1}


def test_layer_out_of_range_fails_before_the_model_loads(tiny_bert_dir, tmp_path):
    with pytest.raises(ConfigError, match="layer 3 is out of range: this model has hidden states 0..2"):
        _run(tiny_bert_dir, tmp_path, layers="3")


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\n\n", "has no text"), (b"ok line\n\xff\xfe bad\n", "line 2: bytes that are not UTF-8")],
)
def test_bad_corpus_is_a_clear_error(tiny_bert_dir, tmp_path, content, message):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        _run(tiny_bert_dir, tmp_path / "out", corpus=[str(corpus)])


def test_unwritable_output_is_a_clear_error(tiny_bert_dir, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot write to the output folder"):
        _run(tiny_bert_dir, blocker / "out")


def test_unknown_option_is_named():
    with pytest.raises(TypeError, match="unexpected keyword argument 'layer_count'"):
        distill.run(layer_count=3)  # type: ignore[call-arg]


def test_cli_reads_stdin_and_reports_errors_in_one_line(tiny_bert_dir, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "distill",
        "run",
        "--model",
        str(tiny_bert_dir),
        "--corpus",
        "-",
        "--out",
        str(tmp_path / "cli"),
        "--min-count",
        "2",
        "--no-progress",
    ]
    done = subprocess.run(cmd, input=TINY_CORPUS.read_bytes(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert b"wrote 6 files" in done.stdout  # vocab.tsv, 4 of layer1.pc, its pieces
    assert KeyedVectors.load_word2vec_format(str(tmp_path / "cli" / "layer1.pc.txt")).vector_size == 32
    manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text())  # the input, not its copy since removed
    assert manifest["config"]["corpus"] == ["-"] and manifest["corpus"]["files"][0]["path"] == "<stdin>"
    assert manifest["corpus"]["files"][0]["sha256"] == hashlib.sha256(TINY_CORPUS.read_bytes()).hexdigest()
    for text, message in [(b"", "error: the corpus (<stdin>) has no text"), (b"ok\n\xff\n", "error: <stdin>, line 2")]:
        empty = subprocess.run([*cmd[:9], str(tmp_path / "e"), *cmd[10:]], input=text, capture_output=True, timeout=120)
        assert empty.returncode == 2 and empty.stderr.decode().startswith(message), empty.stderr.decode()
    bad_cmd = [*cmd[:6], "--layers", "9", "--out", str(tmp_path / "x"), "--corpus", str(TINY_CORPUS)]
    bad = subprocess.run(bad_cmd, capture_output=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.decode().strip().splitlines()[-1].startswith("error: layer 9 is out of range")


def test_write_error_in_the_writer_thread_reaches_the_caller(tiny_bert_dir, tmp_path, monkeypatch):
    import distill.vectors.faiss_index

    def full_disk(*args, **kwargs):
        raise OutputError("disk full while writing layer1.pc.faiss; free some space or choose another --out")

    monkeypatch.setattr(distill.vectors.faiss_index, "write_faiss", full_disk)
    with pytest.raises(OutputError, match="disk full"):
        _run(tiny_bert_dir, tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_text_files_written_by_worker_processes_are_the_writer_threads_bytes(tiny_bert_dir, tmp_path, monkeypatch):
    """A many-core machine formats the sets' text files in processes (threads held each other up on the GIL):
    the same bytes as one writer thread writes, and no temporary file left."""
    import distill.sets

    files = {}
    for writers in (1, 4):
        monkeypatch.setattr(distill.sets, "writer_threads", lambda writers=writers: writers)
        assert (distill.sets.text_writers(["txt"]) is None) == (writers == 1)
        out = tmp_path / str(writers)
        _run(tiny_bert_dir, out, layers="0-2", pooling="pc,mean", formats="bin,txt")
        files[writers] = {p.name: p.read_bytes() for p in out.glob("*.txt")}
        assert not list(out.glob(".*.tmp-*"))
    assert len(files[1]) == 6 and files[1] == files[4]


@pytest.mark.parametrize("error", [RuntimeError, ConfigError])
def test_a_step_after_the_run_that_fails_goes_on_from_the_finished_encoding(tiny_bert_dir, tmp_path, caplog, error):
    from distill.config import RunConfig
    from distill.names import WORK_DIR
    from distill.pipeline import run_pipeline_then
    from distill.rundir import RunDir

    out, whole = tmp_path / "out", _run(tiny_bert_dir, tmp_path / "whole", layers="1")
    config = RunConfig(model=str(tiny_bert_dir), corpus=(str(TINY_CORPUS),), out=str(out), min_count=2,
                       max_occurrences=5, checkpoint_every=0, progress=False)  # fmt: skip

    def tune(result):  # as distill model's tuning does: a set added to the manifest, under the run's own lock
        RunDir(result.out).add_set("layer1.pc.tuned", {"recipe": "x"}, [])
        raise error("the tuning failed")

    with pytest.raises(error, match="the tuning failed"):
        run_pipeline_then(config, tune)
    assert (out / WORK_DIR / "checkpoint.npz").is_file() and not (out / ".distill.lock").exists()
    assert "layer1.pc.tuned" in json.loads((out / "manifest.json").read_text())["derived"]
    with caplog.at_level("INFO", logger="distill"):
        manifest = run_pipeline_then(config, lambda result: RunDir(result.out).manifest())
    assert "the encoding pass was complete" in caplog.text  # not encoded again
    assert "derived" not in manifest and manifest["resumed_from_chunk"] is not None  # the failed step's set went
    assert (out / "layer1.pc.bin").read_bytes() == (whole.out / "layer1.pc.bin").read_bytes()
    assert not (out / WORK_DIR).exists()


def test_model_words_get_the_state_of_the_word_read_alone(tiny_bert_dir, tmp_path):
    import torch
    from transformers import AutoModel, AutoTokenizer

    options = dict(corpus=[str(TINY_CORPUS)], layers="1", pooling="pc,mean", min_count=3, max_occurrences=5)
    plain = _run(tiny_bert_dir, tmp_path / "plain", **options)
    full = _run(tiny_bert_dir, tmp_path / "full", model_words=True, alone_template="bare", **options)
    added = full.manifest["vocabulary"]["from_model_vocabulary"]
    assert added > 0 and full.manifest["vocabulary"]["size"] == plain.manifest["vocabulary"]["size"] + added
    kv = full[1, "mean"]
    np.testing.assert_array_equal(
        kv.vectors[: len(plain[1, "mean"])], plain[1, "mean"].vectors
    )  # corpus words as before
    counts = dict(line.split("\t") for line in (tmp_path / "full" / "vocab.tsv").read_text().splitlines())
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir)
    for word in kv.index_to_key[-added:][:5]:
        assert counts[word] == "0" and word not in plain[1, "mean"].key_to_index
        with torch.no_grad():
            states = model(**tokenizer(word, return_tensors="pt"), output_hidden_states=True).hidden_states
        alone = states[1][0, 1].numpy()  # [CLS] word [SEP]: the word's one piece
        np.testing.assert_allclose(kv[word], alone, atol=1e-5)
        np.testing.assert_allclose(full[1, "pc"][word], alone / np.linalg.norm(alone), atol=1e-5)


def test_a_causal_lms_recommended_set_takes_its_layers_a_quarter_to_a_third_of_the_way_up(tiny_llama_dir, tmp_path):
    """An encoder's recommended set is its upper third; a causal LM's upper layers serve the next token, so its
    set is layer 1 of the tiny Llama's 3 (an encoder of 3 layers would take 2-3)."""
    run = _run(tiny_llama_dir, tmp_path / "run", layers="3", pooling="mean", best=True)
    best = run.manifest["best"]
    assert best == "layer1.mean.unit" and run.manifest["derived"][best]["layers"] == [1]  # one layer's unit rows
    only = _run(tiny_llama_dir, tmp_path / "layer1", layers="1", pooling="mean")  # the same layer, asked for
    np.testing.assert_allclose(run["best"].vectors, only[1, "mean"].get_normed_vectors(), atol=1e-6)


def test_a_causal_lm_as_teacher_is_said_to_have_no_sentence_embedding(tiny_llama_dir, tiny_bert_dir, tmp_path, caplog):
    from distill.config import RunConfig
    from distill.plan import plan_run

    def plan(model: Path) -> None:
        plan_run(RunConfig(model=str(model), corpus=(str(TINY_CORPUS),), out=str(tmp_path / model.name), teacher=True))

    with caplog.at_level("WARNING", logger="distill.plan"):
        plan(tiny_bert_dir)
        assert not caplog.records
        plan(tiny_llama_dir)
    assert "causal LM" in caplog.text and "no sentence embedding" in caplog.text


def test_words_are_read_alone_in_word_by_an_encoder_and_in_concept_by_a_causal_lm(
    tiny_llama_dir, tiny_gpt2_dir, tiny_bert_dir, tmp_path
):
    """The prompt's default follows the model's kind, as the recommended layers do; one given is kept."""
    from distill.config import RunConfig, Template
    from distill.plan import plan_run

    def template(model: Path, **options: str) -> str:
        config = RunConfig(model=str(model), corpus=(str(TINY_CORPUS),), out=str(tmp_path / model.name), **options)
        return str(plan_run(config).config.template)

    assert [template(m) for m in (tiny_bert_dir, tiny_gpt2_dir, tiny_llama_dir)] == ["word", "concept", "concept"]
    assert template(tiny_llama_dir, alone_template="word") == "word"
    assert template(tiny_bert_dir, alone_template="a {word}") == str(Template.parse("a {word}"))


def _killed_after_blocks(tiny_bert_dir, tmp_path, monkeypatch, block, folder, **options):
    """A whole run, then the same run killed at its third block read after the pass (a block is one batch) and
    run again: the batches of the whole run, and of the one that went on from the two blocks kept."""
    from distill.encoding import alone
    from distill.names import WORK_DIR

    monkeypatch.setattr(alone, "BLOCK", block)
    encode_batch, batches, kill_at = alone.encode_batch, [], [0]

    def counted(*args, **kwargs):
        batches.append(1)
        if len(batches) == kill_at[0]:
            raise KeyboardInterrupt
        return encode_batch(*args, **kwargs)

    monkeypatch.setattr(alone, "encode_batch", counted)
    options = {**options, "checkpoint_every": 0}
    _run(tiny_bert_dir, tmp_path / "whole", **options)
    whole, kill_at[0] = len(batches), 3
    batches.clear()
    with pytest.raises(KeyboardInterrupt):
        _run(tiny_bert_dir, tmp_path / "out", **options)
    assert len(list((tmp_path / "out" / WORK_DIR / folder).iterdir())) == 2
    batches.clear()
    kill_at[0] = 0
    resumed = _run(tiny_bert_dir, tmp_path / "out", **options)
    assert not (tmp_path / "out" / WORK_DIR).exists()
    return whole, len(batches), resumed


def test_a_run_killed_while_it_reads_words_alone_goes_on_from_the_blocks_it_kept(tiny_bert_dir, tmp_path, monkeypatch):
    whole, resumed_batches, resumed = _killed_after_blocks(
        tiny_bert_dir, tmp_path, monkeypatch, 4, "alone", layers="1", pooling="mean", best=True, alone_weight=0.5
    )
    assert whole >= 4 and resumed_batches == whole - 2  # the two blocks kept are not read again
    best = resumed.manifest["best"]
    assert (tmp_path / "out" / f"{best}.bin").read_bytes() == (tmp_path / "whole" / f"{best}.bin").read_bytes()


def test_a_run_killed_while_the_teacher_reads_the_bags_goes_on_from_the_blocks_it_kept(
    tiny_bert_dir, tmp_path, monkeypatch
):
    pytest.importorskip("wordfreq")
    from distill.names import TEACHER

    whole, resumed_batches, resumed = _killed_after_blocks(
        tiny_bert_dir, tmp_path, monkeypatch, 8, "texts", layers="1", teacher=True, teacher_bags=30, batch_size=8
    )
    assert whole == 4 and resumed_batches == 2  # 30 bags: four blocks of at most 8, a batch each; two kept
    assert TEACHER in resumed.manifest["files"]
    assert (tmp_path / "out" / TEACHER).read_bytes() == (tmp_path / "whole" / TEACHER).read_bytes()


def test_a_run_without_progress_shows_no_bar_of_transformers_either(tiny_bert_dir, tmp_path, capfd):
    from transformers.utils import logging as hf_logging

    hf_logging.enable_progress_bar()
    _run(tiny_bert_dir, tmp_path / "quiet")
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # the caller's setting, as it was
    _run(tiny_bert_dir, tmp_path / "shown", progress=True)
    assert "Loading weights" in capfd.readouterr().err


def test_a_finished_run_is_not_run_again_while_its_inputs_and_files_are_as_they_were(tiny_bert_dir, tmp_path, caplog):
    """The same command on a finished run returns it as it is (its files untouched, its sets read when asked for);
    a file changed since, an option changed or --restart distils again, and what that writes is what the first
    run wrote."""
    out = tmp_path / "run"
    first = _run(tiny_bert_dir, out, layers="1", best=True)
    files = sorted(json.loads((out / "manifest.json").read_text())["files"])
    stamps = {name: (out / name).stat().st_mtime_ns for name in files}
    with caplog.at_level("INFO", logger="distill.pipeline"):
        again = _run(tiny_bert_dir, out, layers="1", best=True)
    assert again.reused and not first.reused and "is up to date" in caplog.text
    assert {name: (out / name).stat().st_mtime_ns for name in files} == stamps  # nothing written
    assert again["best"].index_to_key == first["best"].index_to_key
    np.testing.assert_array_equal(again["best"].vectors, first["best"].vectors)
    assert sorted(again.vectors) == sorted(first.vectors)
    assert "up to date (--restart distils again)" in distill.pipeline.summary(again)

    distill.derive(out, layers="1", pooling="pc", remove_top=1, progress=False)  # a set added later: proven too
    assert _run(tiny_bert_dir, out, layers="1", best=True).reused
    digests = {name: sha256_file(out / name) for name in files}
    text = out / "layer1.pc.txt"
    text.write_text(text.read_text().replace("0", "1", 1))  # one digit of a vector file, edited
    redone = _run(tiny_bert_dir, out, layers="1", best=True)
    assert not redone.reused and {name: sha256_file(out / name) for name in files} == digests
    assert not _run(tiny_bert_dir, out, layers="1", best=True, resume=False).reused
    assert not _run(tiny_bert_dir, out, layers="1", best=True, seed=1).reused
    assert not _run(tiny_bert_dir, out, layers="1", best=True).reused  # the last run's seed was 1
    assert _run(tiny_bert_dir, out, layers="1", best=True, progress=True).reused  # how a run is watched: no matter
