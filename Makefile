# Two commands do everything on a fresh machine: `make run` and `make test`; `make lint` checks the code.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint imports setup fonts clean

run: $(STAMP) fonts
	$(BIN)/bench run

# The tests on two cores (pytest-xdist); TEST_WORKERS=0 runs them in this one process.
TEST_WORKERS ?= 2

test: $(STAMP) fonts
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# ruff, mypy and import-linter (the stages' import contract, docs/architecture.md) read their
# settings from pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The stages' import contract ([tool.importlinter] in pyproject.toml, docs/architecture.md).
imports: $(STAMP)
	$(BIN)/lint-imports

setup: $(STAMP) fonts

# The fonts reports need for Chinese, Japanese, Korean, Thai, Devanagari, Arabic … (docs/reports.md):
# `python -m bench.report.fonts` names the Debian packages of those missing. As root with apt-get they
# are installed; otherwise one line says what to install. Never fails the build: without them the
# reports draw those characters as U+FFFD.
fonts: $(STAMP)
	@missing="$$($(BIN)/python -m bench.report.fonts 2>/dev/null)"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing the fonts reports need for every script: $$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q $$missing >/dev/null 2>&1 || \
	        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $$missing >/dev/null 2>&1; } || \
	        echo "fonts: could not install $$missing; reports show characters of other scripts as U+FFFD"; \
	else \
	    echo "fonts: for reports in Chinese, Japanese, Korean, Thai, Hindi ... install $$missing (sudo apt-get install $$missing)"; \
	fi; true

# torch goes in first, pinned: 2.13.0 is the CPU build on this machine's disk, and installing it
# before sentence-transformers keeps pip from resolving a multi-GB CUDA build.
# setup.py builds the C reader of bench/evaluation/ (optional: without a compiler numpy does its work).
$(STAMP): pyproject.toml setup.py bench/evaluation/_from_dicts.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) build bench/evaluation/*.so
