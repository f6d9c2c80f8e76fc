"""distill evaluate and distill table through the command line, on a tiny model and the real benchmarks."""

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import distill
from distill.evaluation.datasets import load_benchmark
from distill.evaluation.metrics import evaluate_similarity
from distill.paths import data_dir
from distill.vectors.keyed import to_keyed_vectors, write_word2vec
from distill.vectors.reader import read_vectors

from ..conftest import TINY_CORPUS

pytestmark = pytest.mark.integration  # the real benchmark files of ../shared/data


@pytest.fixture(autouse=True)
def _need_data():
    if not (data_dir() / "similarity").is_dir():
        pytest.skip(f"{data_dir()} is missing: these tests need ../shared/data (or DISTILL_DATA)")


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "distill", *args], capture_output=True, text=True, timeout=timeout)


def test_evaluate_writes_a_report_with_the_same_numbers(tmp_path):
    rng = np.random.default_rng(0)
    words = ["tiger", "cat", "king", "queen", "money", "cash", "bank", "love", "sex", "car", "automobile"]
    kv = to_keyed_vectors(words, rng.standard_normal((len(words), 6)).astype(np.float32))
    write_word2vec(kv, tmp_path / "mine.txt")
    glove_style = tmp_path / "glove.txt"  # header-less, like the published GloVe files
    glove_style.write_text("".join(f"{w} " + " ".join(map(str, v)) + "\n" for w, v in zip(words, kv.vectors[::-1])))
    done = _cli(
        "evaluate",
        str(tmp_path / "mine.txt"),
        "--baseline",
        str(glove_style),
        "--benchmarks",
        "ws353,men",
        "--oov",
        "standard",
        "--out",
        str(tmp_path / "r"),
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    assert "| mine.txt |" in done.stdout and "glove.txt (baseline)" in done.stdout
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    expected = evaluate_similarity(read_vectors(tmp_path / "mine.txt"), load_benchmark("ws353"))
    score = next(s for s in report["rows"][0]["scores"] if s["benchmark"] == "ws353")
    assert score["score"] == pytest.approx(expected.score) and score["n_covered"] == expected.n_covered
    lines = (tmp_path / "r" / "report.md").read_text().splitlines()
    # one score table (standard OOV) and the provenance table, each with both rows
    assert sum(line.startswith("| mine.txt | ") for line in lines) == 2
    assert sum(line.startswith("| glove.txt (baseline) | ") for line in lines) == 1
    assert sum(line.startswith("| glove.txt | ") for line in lines) == 1
    row = next(line for line in lines if line.startswith("| mine.txt | "))
    assert f"{expected.score:.3f} ({expected.n_covered})" in row
    assert (tmp_path / "r" / "scores.png").read_bytes()[:4] == b"\x89PNG"
    bad = _cli("evaluate", str(tmp_path / "mine.txt"), "--benchmarks", "simlex")
    assert bad.returncode == 2 and "unknown benchmark simlex" in bad.stderr


def test_table_distils_every_layer_trains_baselines_and_plots(tiny_bert_dir, tmp_path):
    out = tmp_path / "run"
    args = [
        "table",
        "--model",
        str(tiny_bert_dir),
        "--corpus",
        str(TINY_CORPUS),
        "--layers",
        "0-2",
        "--min-count",
        "2",
        "--max-occurrences",
        "5",
        "--baselines",
        "word2vec,glove",
        "--benchmarks",
        "men,ws353,bless",
        "--no-progress",
        "--out",
        str(out),
    ]
    done = _cli(*args, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "table" / "report.json").read_text())
    assert len(report["rows"]) == 3 * 2 + 2 + 1  # layers x poolings, two same-corpus baselines, published GloVe
    assert [r["baseline"] for r in report["rows"]].count(True) == 3
    assert {r["meta"].get("layer") for r in report["rows"]} == {0, 1, 2, None}
    vocab = [line.split("\t")[0] for line in (out / "vocab.tsv").read_text().splitlines()]
    assert all(r["meta"]["evaluated_vocab_size"] <= len(vocab) for r in report["rows"])
    glove = read_vectors(out / "baselines" / "glove.vec.txt")
    assert set(glove.index_to_key) == set(vocab)  # same words as the distillation
    assert (out / "table" / "layers.png").read_bytes()[:4] == b"\x89PNG"
    again = _cli(*args, "-v")  # everything is reused: no second distillation or training
    assert again.returncode == 0 and "reusing the distillation" in again.stderr
    assert "training" not in again.stderr


def test_evaluate_scores_sentences_of_a_run_and_of_its_model2vec_export(tiny_bert_dir, tmp_path):
    import distill
    from distill.serve.export import export_run
    from distill.serve.formats import Format

    run = distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(tmp_path / "run"), layers="1",
                      min_count=2, max_occurrences=5, progress=False)  # fmt: skip
    (model, _), = export_run(run.out, formats=[Format.MODEL2VEC], out=tmp_path / "m2v")  # fmt: skip
    done = _cli("evaluate", str(run.out), str(model), "--benchmarks", "sts", "--out", str(tmp_path / "r"),
                "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr
    sentences = json.loads((tmp_path / "r" / "report.json").read_text())["sentences"]
    assert [s["label"] for s in sentences] == ["run layer1.pc (sif.unit)", "m2v (model2vec)"]
    # the export bakes in the recipe the run folder is scored with: the same sentence vectors, the same scores
    assert sentences[0]["per_year"] == pytest.approx(sentences[1]["per_year"], abs=1e-6)
    assert all(s["n_pairs"] == 14778 for s in sentences)
    assert "## Sentences: STS 2012-2016" in (tmp_path / "r" / "report.md").read_text()
    # without --out the report goes into the export, listed there: a later export may still replace it whole
    assert _cli("evaluate", str(model), "--benchmarks", "sts", "--no-progress").returncode == 0
    assert {"report.md", "report.json"} <= set(json.loads((model / "export.json").read_text())["files"])
    (again, _), = export_run(run.out, formats=[Format.MODEL2VEC], out=model)  # fmt: skip
    assert again == model and not (model / "report.md").exists()


def test_model_builds_tuned_model2vec_and_sentence_transformers_folders_with_a_card(tiny_bert_dir, tmp_path):
    from model2vec import StaticModel
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "run"
    done = _cli("model", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(out),
                "--tune-epochs", "3", "--teacher-bags", "200", "--bag-topics", "0", "--dims", "8",
                "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr  # (topic bags, whose 50,000 words are slow to read: test_bags.py)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["teacher_bags"] == 200 and manifest["config"]["bag_topics"] == 0
    tuned = f"{manifest['best']}.tuned"
    assert manifest["derived"][tuned]["sentence_ready"] and "teacher.npz" in manifest["files"]
    assert manifest["config"]["split_sentences"]  # the teacher's targets are single sentences
    scores = json.loads((out / "st" / "scores.json").read_text())
    exported = scores["exported"]
    assert exported in (manifest["best"], tuned) and scores["chosen_on"] == "STS 2012-2014"
    assert scores["sts"][0]["label"] == f"{exported} (model2vec export)" and len(scores["sts"]) == 2
    # the choice is made on both sets as exported (as small as asked), the kept one the higher on the dev years
    other = ({manifest["best"], tuned} - {exported}).pop()
    assert scores["sts"][1]["label"] == f"{other} (model2vec export)"
    dev = [np.mean([s["per_year"][y] for y in ("2012", "2013", "2014")]) for s in scores["sts"]]
    assert dev[0] >= dev[1]
    m2v_exported = json.loads((out / "model2vec" / "export.json").read_text())
    assert m2v_exported["set"] == exported and m2v_exported["dims"] == 8
    from huggingface_hub import ModelCard

    card = (out / "model2vec" / "README.md").read_text()
    assert f"- vector set: `{exported}`" in card and "## STS 2012-2016" in card and "## Words" in card
    assert "\n- stored: 8 dimensions (PCA of the vocabulary, " in card  # what the export made smaller
    assert f"{manifest['corpus']['lines']:,} sentences)" in card  # the corpus was read as its sentences
    tuned_line = f"- vector set: `{tuned}`, tuned from `{manifest['best']}` toward the teacher's sentence embeddings"
    assert (tuned_line in card) == (exported == tuned)
    assert ("every row through one shared linear map" in card) == (exported == tuned)  # the default tuning
    assert ("and 200 bags of the language's frequent words" in card) == (exported == tuned)
    assert ".tmp-" not in card and str(tmp_path) not in card and "example.invalid" not in card
    m2v_card, st_card = ModelCard.load(out / "model2vec" / "README.md"), ModelCard.load(out / "st" / "README.md")
    assert m2v_card.data.library_name == "model2vec" and st_card.data.library_name == "sentence-transformers"

    # the same command again: the finished run is up to date, so it is tuned and exported again, not distilled
    encoded = {name: (out / name).stat().st_mtime_ns for name in ("vocab.tsv", f"{manifest['best']}.bin")}
    weights = (out / "model2vec" / "model.safetensors").read_bytes()
    again = _cli("model", "--model", str(tiny_bert_dir), "--corpus", str(TINY_CORPUS), "--out", str(out),
                 "--tune-epochs", "3", "--teacher-bags", "200", "--bag-topics", "0", "--dims", "8",
                 "--no-progress", "-v")  # fmt: skip
    assert again.returncode == 0 and "is up to date" in again.stderr, again.stderr
    assert {name: (out / name).stat().st_mtime_ns for name in encoded} == encoded
    assert (out / "model2vec" / "model.safetensors").read_bytes() == weights  # the same tuning, the same model
    assert json.loads((out / "st" / "scores.json").read_text()) == scores
    assert not (out / ".distill-work").exists()
    assert m2v_card.data.model_name == "run-model2vec" and 'StaticModel.from_pretrained("run-model2vec")' in card
    assert 'SentenceTransformer("run-st")' in st_card.text and "StaticModel" not in st_card.text
    results = {r.dataset_type: r.metric_value for r in m2v_card.data.eval_results}
    assert results["mteb/sts12-sts"] == pytest.approx(scores["sts"][0]["mteb"]["STS12"], abs=0.01)
    assert results["mteb/sts16-sts"] == pytest.approx(scores["sts"][0]["per_year"]["2016"], abs=0.01)
    assert scores["sts"][0]["mteb_mean"] == pytest.approx(np.mean(list(scores["sts"][0]["mteb"].values())))
    # the word scores are the set's, not those of a folder reduced to 8 dimensions: not the model's metadata
    assert "simlex999" not in results and "before the export's `--dims` or `--top-words`" in card
    from distill.production import model_card
    from distill.serve.formats import Format

    whole = ModelCard(model_card(manifest, exported, [], scores["words"], Format.MODEL2VEC, "m", {"dtype": "int8"}))
    results = {r.dataset_type: r.metric_value for r in whole.data.eval_results}  # a folder of the set's vectors
    assert results["simlex999"] == pytest.approx(100 * scores["words"][exported]["simlex999"]["spearman"], abs=0.01)
    assert "- stored: int8, one scale for the table" in whole.text
    # both loaders give the same sentence vectors: the mean of the exported words' vectors
    m2v, st = StaticModel.from_pretrained(str(out / "model2vec")), SentenceTransformer(str(out / "st"), device="cpu")
    words = " ".join(distill.load(out, vector_set=exported).index_to_key[:3])
    a, b = m2v.encode([words])[0], st.encode([words])[0]
    assert a @ b / np.linalg.norm(a) / np.linalg.norm(b) == pytest.approx(1.0, abs=1e-5)
    # a later run in the folder removes the exports made from the vectors it replaces, not a file a user added
    assert manifest["exports"] == ["model2vec", "st"]
    (out / "st" / "notes.txt").write_text("mine")
    distill.run(model=str(tiny_bert_dir), corpus=[str(TINY_CORPUS)], out=str(out), layers="1", progress=False)
    assert not (out / "model2vec").exists() and (out / "st" / "notes.txt").read_text() == "mine"
    assert "exports" not in json.loads((out / "manifest.json").read_text())


def test_a_finished_run_is_reused_only_while_its_model_and_files_are_unchanged_by_content(tiny_bert_dir, tmp_path):
    import shutil

    from distill.config import RunConfig
    from distill.evaluation.table import _reusable_run
    from distill.names import MANIFEST
    from distill.pipeline import run_pipeline

    model, out = tmp_path / "model", tmp_path / "run"
    shutil.copytree(tiny_bert_dir, model)
    config = RunConfig(model=str(model), corpus=(str(TINY_CORPUS),), out=str(out), layers="1", min_count=2,
                       max_occurrences=5, progress=False)  # fmt: skip
    run_pipeline(config)
    manifest = json.loads((out / MANIFEST).read_text())
    assert {f["name"] for f in manifest["model"]["files"]} == {p.name for p in model.iterdir() if p.is_file()}
    assert _reusable_run(config, out)
    config_file = model / "config.json"
    original = config_file.read_bytes()
    config_file.write_bytes(original.replace(b"{", b"{ ", 1))  # same name, same meaning, other bytes
    assert not _reusable_run(config, out)
    config_file.write_bytes(original)
    assert _reusable_run(config, out)
    vectors = out / "layer1.pc.bin"
    written = vectors.read_bytes()
    vectors.write_bytes(written[:-1] + bytes([written[-1] ^ 1]))  # the distillation's output, changed since
    assert not _reusable_run(config, out)
    vectors.write_bytes(written)
    assert _reusable_run(config, out)
    del manifest["model"]["files"]  # a run recorded before the model's digests were
    (out / MANIFEST).write_text(json.dumps(manifest))
    assert not _reusable_run(config, out)


def test_the_table_s_notes_read_the_baselines_times_and_survive_a_damaged_record(tmp_path):
    from distill.evaluation.table import _baseline_times

    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"files": {"glove.vec.txt": {"method": "glove", "train_seconds": 12.4}}}))
    assert _baseline_times(path) == "glove 12 s"
    for damaged in ('{"files": {"glove.vec.txt": {"method": "glove"}}}', '{"files": []}', "[]", "{"):
        path.write_text(damaged)
        assert _baseline_times(path) == ""


def test_a_table_that_cannot_finish_is_refused_before_it_distils(tiny_bert_dir, tmp_path):
    from distill.config import RunConfig
    from distill.errors import ConfigError
    from distill.evaluation.table import TableConfig, make_table

    def distil(run: RunConfig) -> None:
        pytest.fail(f"distilled {run.model}")

    run = RunConfig(model=str(tiny_bert_dir), corpus=(str(TINY_CORPUS),))
    with pytest.raises(ConfigError, match="two of the table's models would be distilled into one folder"):
        make_table(TableConfig(runs=(run, run)), distil)
    missing = str(tmp_path / "glove.txt")
    with pytest.raises(ConfigError, match=f"vector file {missing} not found"):
        make_table(TableConfig(runs=(run,), baseline_files=(missing,), out=tmp_path / "t"), distil)
    assert not (tmp_path / "t").exists()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text("{}")  # a run folder, whose report.md the table's would replace
    two = (replace(run, out=str(tmp_path / "a")), replace(run, out=str(tmp_path / "b")))
    with pytest.raises(ConfigError, match="is a distill run folder"):
        make_table(TableConfig(runs=two, out=tmp_path / "run"), distil)
