"""Rebuild the tiny tokenizers of the unit tests from tiny_corpus.txt (run once; the output is committed).

``wordpiece/vocab.txt``: an uncased BERT WordPiece vocabulary; ``bpe/vocab.json`` + ``bpe/merges.txt``: a
GPT-2-style byte-level BPE. Both are small enough that tests build tokenizers from them in milliseconds.
"""

from pathlib import Path

from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer

DATA = Path(__file__).parent
LINES = (DATA / "tiny_corpus.txt").read_text(encoding="utf-8").splitlines()

if __name__ == "__main__":
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(
        LINES, vocab_size=400, min_frequency=1, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False,
    )  # fmt: skip
    wordpiece.save_model(str(DATA / "wordpiece"))
    vocab = (DATA / "wordpiece" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"  # every word can be split, as in BERT's vocabulary
    vocab += [t for c in letters for t in (c, f"##{c}") if t not in vocab]
    (DATA / "wordpiece" / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        LINES, vocab_size=500, min_frequency=1, special_tokens=["<|endoftext|>"], show_progress=False
    )
    bpe.save_model(str(DATA / "bpe"))
