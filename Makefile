# The two commands of README.md: `make demo` and `make test`. CI runs `make test` (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint types unit integration realnode install cluster-down clean deploy

# REALNODE=0 deselects the real-Spark suite (a developer without root); the run says so.
REALNODE ?= 1

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## demo: bring the embedded local cluster up (with a real node) and run the main job on it.
demo: $(STAMP)
	$(BIN)/python examples/demo.py

## test: lint + types + unit + integration (KWOK) + realnode (Spark really runs on a real node).
test: lint types unit integration realnode

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

## realnode: the real-Spark suite on a dev cluster with a real node (kubelet, containerd, runc).
realnode: $(STAMP)
ifeq ($(REALNODE),0)
	@echo "REALNODE=0: the real-Spark suite (tests/realnode) was DESELECTED; nothing proves Spark runs"
else
	@# the cold builds (node components, images) take minutes: before pytest's per-test timeout
	$(BIN)/sparkplane dev-cluster build --real-node
	$(BIN)/python -m pytest -q tests/realnode
endif

cluster-down: $(STAMP)
	$(BIN)/sparkplane dev-cluster down

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

## deploy: regenerate every generated file under deploy/ (unit tests fail when they drift)
deploy: $(STAMP)
	$(BIN)/python -m sparkplane.security.deploy deploy/rbac
	$(BIN)/python -m sparkplane.security.admission deploy/policy
	$(BIN)/python -m sparkplane.staging.deploy deploy/staging
	$(BIN)/python -m sparkplane.lifecycle.gc deploy/gc
	$(BIN)/sparkplane operator manifests --write deploy
