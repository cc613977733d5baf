# FLAME's two Quick-start commands (`make demo`, `make test`) and the docs build.
# Each target sets up what it needs from nothing: a venv in .venv with the packages from PyPI.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
BIN   := $(VENV)/bin
STAMP := $(VENV)/.flame-installed

.PHONY: install demo test check-clean lint nbtest pytest docs browser

# On a CPU machine `torch==2.13.0` resolves to the local CPU build; an unpinned torch would pull
# gigabytes of CUDA wheels, so torch is installed first, pinned, and only if the venv lacks one.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# `flame train` with no arguments: a LoRA on the embedded default, written to runs/demo/.
demo: install
	$(BIN)/flame train

# Headless Chromium for the docs test (Debian's package; root on CI machines).
browser:
	command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The package must equal what the notebooks export, and the notebooks must be clean:
# run both tools on a copy and fail on any difference, leaving the working tree alone.
check-clean: install
	@tmp=$$(mktemp -d) && cp -r pyproject.toml nbs flame $$tmp/ && \
	  (cd $$tmp && $(abspath $(BIN))/nbdev-export && $(abspath $(BIN))/nbdev-clean) && \
	  find $$tmp -name __pycache__ -prune -exec rm -rf {} + && \
	  if diff -r -x __pycache__ nbs $$tmp/nbs && diff -r -x __pycache__ flame $$tmp/flame; then \
	    echo "check-clean: package matches notebooks, notebooks clean"; rm -rf $$tmp; \
	  else echo "check-clean: run nbdev-export and nbdev-clean, then commit" >&2; rm -rf $$tmp; exit 1; fi

# Cells flagged cuda/slow are skipped. The kernel notebooks (1x_) run their Triton kernels on CPU through
# Triton's interpreter (fp32); the other notebooks run the kernels' PyTorch references on CPU, as users'
# CPU code does (the interpreter is far too slow for whole models). Separate runs, because a worker
# process keeps its environment and imported modules from one notebook to the next.
nbtest: install
	TRITON_INTERPRET=1 $(BIN)/nbdev-test --n-workers 2 --timing --file-re '^1[0-9]_.*\.ipynb$$'
	TRITON_INTERPRET=0 $(BIN)/nbdev-test --n-workers 2 --timing --skip-file-re '^([_.]|1[0-9]_)'

# Every undefined or unused name in the package fails the build (pyflakes: no style rules, no configuration).
lint: install
	$(BIN)/python -m pyflakes flame

pytest: install browser
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m pytest -q tests

test: check-clean lint nbtest pytest

docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) docs/build.py
