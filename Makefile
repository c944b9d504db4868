# Two commands do everything on a fresh machine: `make run` and `make test`; `make lint` checks the code.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint setup clean

run: $(STAMP)
	$(BIN)/bench run

# The tests on two cores (pytest-xdist); TEST_WORKERS=0 runs them in this one process.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# ruff and mypy read their settings from pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

setup: $(STAMP)

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
