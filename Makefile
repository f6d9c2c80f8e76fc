# distill: `make distill` runs the default job, `make test` the tests. Both set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
MODEL ?= minilm
LAYER ?= 1
POOLING ?= pc
CORPUS ?=
OUT ?=
ARGS ?=

.PHONY: install distill test test-all lint bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev,gguf]"
	touch $@

install: $(VENV)/.installed

distill: install
	$(VENV)/bin/distill run --model $(MODEL) --layers $(LAYER) --pooling $(POOLING) \
		$(foreach c,$(CORPUS),--corpus $(c)) $(if $(OUT),--out $(OUT)) $(ARGS)

test: install
	$(PY) -m pytest -q -m "not slow"

test-all: install
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check distill tests benchmarks
	$(VENV)/bin/ruff format --check distill tests benchmarks

bench: install
	$(PY) benchmarks/throughput.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
