"""The README's Python example and every ``bash`` and ``python`` block of docs/, run as a user runs them (in a
fresh folder holding ``corpus.txt``), on a tiny random 6-layer BERT standing in for the default model: the
documentation cannot drift from the code. ``console`` blocks (hub models, GPUs, clusters, make) are shown only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from distill.evaluation.datasets import REGISTRY
from distill.evaluation.sentences import STS_FILE
from distill.paths import data_dir

from .conftest import TINY_CORPUS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.M | re.S)


def runnable(page: Path) -> list[tuple[str, str]]:
    """(language, code) of each block the page asks to run."""
    return FENCE.findall(page.read_text(encoding="utf-8"))


def test_the_readme_is_a_landing_page_and_every_page_is_collected():
    assert len((ROOT / "README.md").read_bytes()) <= 10_000
    assert [lang for lang, _ in runnable(ROOT / "README.md")] == ["python"]
    assert {p.name for p in PAGES if runnable(p)} >= {"README.md", "usage.md", "evaluation.md", "deployment.md"}
    assert runnable(Path(__file__)) == []  # this file's own fences are not a page's


@pytest.fixture(scope="module")
def user_env(tmp_path_factory, wordpiece_tokenizer) -> dict[str, str]:
    """Models and data folders as a user's machine has them, the default model being a tiny random BERT."""
    import torch
    from transformers import BertConfig, BertModel

    if not (data_dir() / STS_FILE[0]).is_file():
        pytest.skip("needs ../shared/data (the benchmarks the pages score on)")
    root = tmp_path_factory.mktemp("docs")
    default = root / "models" / "all-MiniLM-L6-v2"  # what DEFAULT_MODEL resolves to in $DISTILL_MODELS
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(wordpiece_tokenizer), hidden_size=32, num_hidden_layers=6,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=128)  # fmt: skip
    BertModel(config).eval().save_pretrained(default)
    wordpiece_tokenizer.save_pretrained(default)
    data = root / "data"
    for relative in [b.path for b in REGISTRY.values() if b.name in ("simlex999", "men", "ws353", "google")]:
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir() / relative, data / relative)
    (data / STS_FILE[0]).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data_dir() / STS_FILE[0], data / STS_FILE[0])
    shutil.copyfile(TINY_CORPUS, data / "corpus" / "sts" / "sts_2012_2016_sentences.txt")  # the default corpus
    bin_dir = str(Path(sys.executable).parent)  # where `distill` is installed
    return {**os.environ, "DISTILL_MODELS": str(root / "models"), "DISTILL_DATA": str(data),
            "DISTILL_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg",
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: p.name)
def test_every_example_of_the_page_runs(page, user_env, tmp_path):
    shutil.copyfile(TINY_CORPUS, tmp_path / "corpus.txt")
    for lang, code in runnable(page):
        command = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=tmp_path, env=user_env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{page.name}, this {lang} block failed:\n{code}\n{done.stderr[-3000:]}"
