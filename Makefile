# FLAME's two Quick-start commands (`make demo`, `make test`) and the docs build.
# Each target sets up what it needs from nothing: a venv in .venv with the packages from PyPI.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
BIN   := $(VENV)/bin
STAMP := $(VENV)/.flame-installed

.PHONY: install demo test check-clean lint nbtest pytest docs browser wheels test-gpu test-gpu-setup test-gpu-nbs test-gpu-bench test-gpu-1 test-gpu-2 test-gpu-3 test-gpu-4 test-gpu-12 test-gpu-34 test-gpu-all

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

# Headless Chromium for the docs test: Debian's package, installed system-wide with apt (root on CI machines).
# Where it cannot be installed, the browser test is skipped with a message saying so (tests/test_docs.py).
browser:
	command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || echo "browser: could not install chromium with apt; the docs browser test will be skipped" >&2

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
# The tests write their files (checkpoints, caches, runs: about 0.7 GB in all) under TMPDIR, which each test target
# points at a fresh .test-tmp/ and removes when it passes: runs one after another never fill the disk.
TEST_TMP := $(CURDIR)/.test-tmp
nbtest: install
	rm -rf $(TEST_TMP) && mkdir -p $(TEST_TMP)
	TMPDIR=$(TEST_TMP) TRITON_INTERPRET=1 $(BIN)/nbdev-test --n-workers 2 --timing --file-re '^1[0-9][a-z]?_.*\.ipynb$$'
	TMPDIR=$(TEST_TMP) TRITON_INTERPRET=0 $(BIN)/nbdev-test --n-workers 2 --timing --skip-file-re '^([_.]|1[0-9][a-z]?_)'
	rm -rf $(TEST_TMP)

# Every undefined or unused name in the package fails the build (pyflakes: no style rules, no configuration).
lint: install
	$(BIN)/python -m pyflakes flame

pytest: install browser
	rm -rf $(TEST_TMP) && mkdir -p $(TEST_TMP)
	TMPDIR=$(TEST_TMP) NO_MKDOCS_2_WARNING=1 $(BIN)/python -m pytest -q -rs tests
	rm -rf $(TEST_TMP)

test: check-clean lint nbtest pytest

docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) docs/build.py

# The GPU suite, for a machine whose Python already has torch with CUDA (and Triton, transformers) but no
# internet: every notebook with its `cuda` and `slow` cells, pyflakes, and a smoke run of each benchmark (the docs
# test stays with `make test`: it needs no GPU).
# Packages the machine lacks come from .whl/, filled beforehand on a machine with internet by `make wheels`
# (pure-Python wheels, ~14 MB, git-ignored); carry .whl/ along with the tree.
GPU_WHEELS := nbdev execnb fastcore fastgit fastspec fasttransport ghapi httpx2 httpcore2 truststore lazy_importer \
  asttokens astunparse executing pure_eval stack_data ipython ipython_pygments_lexers jedi parso pexpect ptyprocess \
  prompt_toolkit wcwidth traitlets matplotlib_inline comm ipywidgets jupyterlab_widgets widgetsnbextension watchdog \
  diffusers importlib_metadata pyflakes
GPU_SITE ?= /tmp/flame-site
GPU_ENV := PYTHONPATH=$(GPU_SITE):$(CURDIR) PATH=$(GPU_SITE)/bin:$$PATH PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
SMOKE := /tmp/flame-bench-smoke

wheels:
	python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl $(GPU_WHEELS)

# `make test-gpu` runs all of it in one command (well over 10 minutes on an H100). A lent GPU machine runs one command for at
# most 10 minutes, so the suite also runs as four commands of parallel lanes, `make test-gpu-1`, `-2`, `-3`, then `-4`
# (.ci/gpu-lanes says which lane holds what; H100, 2026-11-26: parts 1, 3 and 4 took 322, 184 and 274 s).
# On a machine of four GPUs or more, `make test-gpu-all` runs the four parts at once, one GPU each (about 9 minutes on four H100s).
# NBS='regex' runs some notebooks, BENCHES="bench/a.py ..." some benchmarks. Cells slower than 20 s are named in the log.
GPU_WORKERS ?= 6
NBS ?= .
test-gpu-setup:
	@python3 -c "import torch, sys; torch.cuda.is_available() or sys.exit('test-gpu: no CUDA device (use make test on CPU)')"
	@test -d .whl || { echo "test-gpu: .whl/ is missing: run 'make wheels' on a machine with internet, then carry .whl/" >&2; exit 2; }
	python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $(GPU_SITE) .whl/*.whl
	python3 -c "import torch; print('test-gpu on', torch.cuda.get_device_name(), 'torch', torch.__version__)"

test-gpu-nbs: test-gpu-setup
	$(GPU_ENV) nbdev-test --flags "cuda slow" --n-workers $(GPU_WORKERS) --timing --cell-timing-min 20 --file-re "$(NBS)"
	$(GPU_ENV) python3 -m pyflakes flame
	@echo "test-gpu-nbs: passed"

# sd3_reference compares against Stability's own sd3.5 checkout (--ref, a git clone the GPU machine cannot make); it is
# fp32 on the CPU and is run by hand where the clone is (its results: bench/results/sd3_reference.json).
NO_SMOKE := sd3_reference
BENCHES ?= $(wildcard bench/*.py)
test-gpu-bench: test-gpu-setup
	rm -rf $(SMOKE) && mkdir -p $(SMOKE)
	set -e; for b in $(BENCHES); do n=$$(basename $$b .py); \
	  if [[ " $(NO_SMOKE) " == *" $$n "* ]]; then echo "== bench smoke: $$n not run (needs a checkout; see NO_SMOKE)"; continue; fi; \
	  echo "== bench smoke: $$n"; \
	  s=$$SECONDS; $(GPU_ENV) python3 $$b --smoke --out $(SMOKE)/$$n.json; echo "== $$n: $$((SECONDS - s)) s"; done
	@echo "test-gpu-bench: passed"

test-gpu: test-gpu-nbs test-gpu-bench
	@echo "test-gpu: passed"

test-gpu-1 test-gpu-2 test-gpu-3 test-gpu-4 test-gpu-12 test-gpu-34 test-gpu-all: test-gpu-setup
	bash .ci/gpu-lanes $(subst test-gpu-,,$@)
