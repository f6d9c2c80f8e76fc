#!/usr/bin/env bash
# The built wheel (dist/*.whl) in a fresh environment, run from outside the checkout, with no data or models
# folder: `distill --version`, `distill run` on a tiny local model, `distill evaluate` on the word2vec file.
set -euo pipefail
wheel=$(realpath "$(ls dist/distill-*.whl | head -1)")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
pip() { "$tmp/venv/bin/pip" install -q "$@" 2> "$tmp/pip.log" || { cat "$tmp/pip.log"; exit 1; }; }
pip torch==2.13.0  # the CPU build on local disk, before anything asks for torch
pip "$wheel"
cd "$tmp"
unset DISTILL_DATA DISTILL_MODELS DISTILL_SHARED DISTILL_CACHE
export HF_HUB_OFFLINE=1 PATH="$tmp/venv/bin:$PATH"
distill --version
# A tiny random BERT with a WordPiece vocabulary of the corpus's words (no download)
cat > corpus.txt <<'TEXT'
the old man and the new car were on the road to the city .
a happy child is a cheerful child and a smart student is an intelligent student .
the king and the queen lived in a castle near the river .
hard work is difficult work but easy work is simple work .
the cat and the dog ran to the house in the city .
TEXT
for i in 1 2 3 4 5 6; do cat corpus.txt; done > corpus6.txt
python - <<'PY'
from transformers import BertConfig, BertModel, BertTokenizerFast
words = sorted({w for line in open("corpus.txt") for w in line.split()})
open("vocab.txt", "w").write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
tokenizer = BertTokenizerFast("vocab.txt", do_lower_case=True)
config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=512)
BertModel(config).save_pretrained("tiny")
tokenizer.save_pretrained("tiny")
PY
distill run --model ./tiny --corpus corpus6.txt --layers 1 --pooling mean --min-count 2 --out run
distill evaluate run/layer1.mean.txt --benchmarks simlex999,men,ws353,google --oov standard --out report
test -s report/report.md
# Without --benchmarks: what ships is scored, the rest is named once as skipped
distill evaluate run/layer1.mean.txt --out report-all 2> all.log
grep -q "skipping" all.log
echo "wheel check: ok"
