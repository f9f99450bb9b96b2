# Two entry points for a newcomer: `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
BPM_TEST_DATABASE_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/bpm_test
# Test processes; each test file runs whole in one of them (its module fixtures are set up
# once). Most tests wait on PostgreSQL, Redis or a subprocess, so 4 suit a 2-core machine.
TEST_WORKERS ?= 4
export BPM_TEST_DATABASE_URL

.PHONY: demo test conformance lint typecheck bench services testdb clean

## demo: a virtualenv with the engine only, then `bpm demo` on SQLite (no server, no broker)
demo: $(VENV)/.demo-installed
	$(BIN)/bpm demo

# The virtualenv is made once: `venv` run again over it with another Python rewrites its
# pyvenv.cfg and breaks every installed package.
$(VENV)/.demo-installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

## test: dev virtualenv, PostgreSQL and Redis up, a fresh test database, the whole suite
test: $(VENV)/.dev-installed services testdb
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

$(VENV)/.dev-installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.demo-installed

## conformance: the BPMN conformance corpus only, verbose, with a per-model summary at the end
conformance: $(VENV)/.dev-installed services testdb
	$(BIN)/python -m pytest -v -rs tests/integration/test_bpmn_conformance.py $(PYTEST_ARGS)

services:
	@scripts/ensure_services.sh

testdb: $(VENV)/.dev-installed
	$(BIN)/python scripts/fresh_database.py "$(BPM_TEST_DATABASE_URL)"

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.dev-installed services
	$(BIN)/python -m bench.engine_throughput

clean:
	rm -rf $(VENV) build *.egg-info bpm-demo.db
