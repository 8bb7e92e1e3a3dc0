PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/pip install -q -c constraints.txt

.PHONY: simulate test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.core: $(BIN)/python setup.cfg pyproject.toml constraints.txt
	$(PIP) -e .
	touch $@

$(VENV)/.dev: $(BIN)/python setup.cfg pyproject.toml constraints.txt
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.core

simulate: $(VENV)/.core
	$(BIN)/embsim simulate --topology 16x8

# Tests on every core (pytest-xdist): the validation-bound tests simulate hundreds of runs;
# loadscope keeps each module's fixtures on one worker, so none is computed twice.
test: $(VENV)/.dev
	$(BIN)/python -m pytest -q -n auto --dist loadscope

bench: $(VENV)/.core
	$(BIN)/python benchmarks/nccl_tests_speed.py
	$(BIN)/python benchmarks/simulate_speed.py
	$(BIN)/python benchmarks/scale_speed.py
	$(BIN)/python benchmarks/network_speed.py

clean:
	rm -rf $(VENV) build *.egg-info
