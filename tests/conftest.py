"""Shared fixtures: tiny random models built from configs, with tokenizers built from tests/data (so the unit
tests need nothing from ../shared); the real MiniLM and SmolLM2 tokenizers for the integration tests."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # unit tests never touch the network

from distill.paths import models_dir

DATA = Path(__file__).parent / "data"
TINY_CORPUS = DATA / "tiny_corpus.txt"
MINILM = models_dir() / "all-MiniLM-L6-v2"
SMOL = models_dir() / "SmolLM2-135M-Instruct-Q4_1-gguf"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is missing: these tests need ../shared/models (or DISTILL_MODELS)")
    return path


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def wordpiece_tokenizer():
    """An uncased BERT WordPiece tokenizer over the tiny corpus's vocabulary (tests/data/wordpiece)."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import PreTrainedTokenizerFast

    wordpiece = BertWordPieceTokenizer(str(DATA / "wordpiece" / "vocab.txt"), lowercase=True)
    return PreTrainedTokenizerFast(tokenizer_object=wordpiece._tokenizer, unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")  # fmt: skip


@pytest.fixture(scope="session")
def bpe_tokenizer():
    """A GPT-2-style byte-level BPE tokenizer (pieces carry their leading space) from tests/data/bpe."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(str(DATA / "bpe" / "vocab.json"), str(DATA / "bpe" / "merges.txt"))
    end = "<|endoftext|>"
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=end, eos_token=end, unk_token=end)


@pytest.fixture(scope="session")
def minilm_tokenizer():
    """MiniLM's real uncased WordPiece tokenizer (bert-base-uncased vocabulary): integration tests only."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_need(MINILM))


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """SmolLM2's real byte-level BPE tokenizer: integration tests only."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_need(SMOL))


@pytest.fixture(scope="session")
def sentencepiece_tokenizer():
    """A SentencePiece-style BPE (``▁`` marks word starts, as in the Llama family) trained on the tiny corpus."""
    from tokenizers import SentencePieceBPETokenizer
    from transformers import PreTrainedTokenizerFast

    sp = SentencePieceBPETokenizer()
    sp.train_from_iterator(
        TINY_CORPUS.read_text().splitlines(),
        vocab_size=300,
        min_frequency=1,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        show_progress=False,
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=sp._tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def _save(tmp: Path, model: torch.nn.Module, tokenizer) -> Path:
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    return tmp


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, wordpiece_tokenizer) -> Path:
    """2-layer, 32-wide random BERT with MiniLM's tokenizer, saved as a local model folder."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(wordpiece_tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=128,
    )
    return _save(tmp_path_factory.mktemp("tiny-bert"), BertModel(config).eval(), wordpiece_tokenizer)


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory, bpe_tokenizer) -> Path:
    """2-layer random GPT-2 with a byte-level BPE tokenizer."""
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(bpe_tokenizer),
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=128,
        bos_token_id=bpe_tokenizer.bos_token_id,
        eos_token_id=bpe_tokenizer.eos_token_id,
    )
    return _save(tmp_path_factory.mktemp("tiny-gpt2"), GPT2Model(config).eval(), bpe_tokenizer)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory, sentencepiece_tokenizer) -> Path:
    """2-layer random Llama with a SentencePiece-style tokenizer."""
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(sentencepiece_tokenizer),
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=37,
        max_position_embeddings=128,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
    )
    return _save(tmp_path_factory.mktemp("tiny-llama"), LlamaModel(config).eval(), sentencepiece_tokenizer)


@pytest.fixture(params=["bert", "gpt2", "llama"])
def tiny_model_dir(request) -> Path:
    return request.getfixturevalue(f"tiny_{request.param}_dir")
