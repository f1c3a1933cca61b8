# The two commands of README.md: `make demo` and `make test`. CI runs `make test` (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint types unit integration install cluster-down clean deploy

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## demo: bring the embedded local cluster up and run the main job on it.
demo: $(STAMP)
	$(BIN)/python examples/demo.py

## test: lint + types + unit + integration (the integration suite builds/starts the dev cluster).
test: lint types unit integration

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/lint-imports

types: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	@# the cold build takes many minutes: do it before pytest (whose per-test timeout would cut it)
	if [ -z "$$SPARKPLANE_TEST_KUBECONFIG" ]; then $(BIN)/sparkplane dev-cluster build; fi
	$(BIN)/python -m sparkplane.devcluster.helmbin
	$(BIN)/python -m pytest -q tests/integration

cluster-down: $(STAMP)
	$(BIN)/sparkplane dev-cluster down

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

## deploy: regenerate every generated file under deploy/ (unit tests fail when they drift)
deploy: $(STAMP)
	$(BIN)/python -m sparkplane.security.deploy deploy/rbac
	$(BIN)/python -m sparkplane.staging.deploy deploy/staging
	$(BIN)/python -m sparkplane.lifecycle.gc deploy/gc
	$(BIN)/sparkplane operator manifests --write deploy
