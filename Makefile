# The two commands of README.md: `make demo` and `make test`. CI runs `make test` (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test checks prebuild lint types unit integration realnode install cluster-down clean deploy lock \
	airflow-venv kubeflow-venv jupyter-venv

# REALNODE=0 deselects the real-Spark suite (a developer without root); the run says so.
REALNODE ?= 1

# Installs come only from the lock: requirements/dev.lock pins every package of the CLI, the images
# (they copy this venv's packages) and the dev tools, pip/setuptools/wheel included, with sha256s
# that pip checks. It is made by `uv pip compile` (a plain requirements file pip installs; uv.lock
# would need uv to install). build.lock is its subset that builds: installed first, so that
# pyspark (an sdist) and sparkplane build without an isolated env, which would fetch an unpinned
# setuptools. A new lock makes a fresh venv (nothing stale stays); pyproject.toml edits only
# re-install sparkplane itself. The dev cluster is a distribution of its own (devcluster/,
# sparkplane-devcluster: not in sparkplane's wheel), installed beside it the same way; its
# requirements are in the lock already (tests/unit/test_lock.py checks).
LOCK       := requirements/dev.lock
BUILD_LOCK := requirements/build.lock
LOCK_STAMP := $(VENV)/.lock-stamp
UPGRADE    ?= 0

$(LOCK_STAMP): $(LOCK) $(BUILD_LOCK)
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(BUILD_LOCK)
	$(BIN)/python -m pip install --quiet --require-hashes --no-build-isolation -r $(LOCK)
	touch $(LOCK_STAMP)

DEVCLUSTER := devcluster

$(STAMP): $(LOCK_STAMP) pyproject.toml $(DEVCLUSTER)/pyproject.toml
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e . -e ./$(DEVCLUSTER)
	touch $(STAMP)

install: $(STAMP)

## The Airflow provider (providers/airflow, sparkplane-airflow) runs in a venv of its own: Airflow
## pins ~150 packages that must not reach .venv (the images copy its packages). Its lock is
## compiled against dev.lock (-c), so every package both have is at the same version (caps that
## would forbid it are lifted in requirements/airflow.overrides); uv installs
## it (~1 min cold, ~15 s from uv's cache), then this checkout's sparkplane and the provider
## go in with --no-deps (editable, built by the locked setuptools). Byte-compiled at install
## (--compile-bytecode): with PYTHONDONTWRITEBYTECODE set, every Airflow task process would
## otherwise compile airflow and both Kubernetes clients anew (minutes per task on a busy machine).
AIRFLOW_VENV  := .venv-airflow
AIRFLOW_LOCK  := requirements/airflow.lock
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed-stamp
PROVIDER      := providers/airflow

$(AIRFLOW_VENV)/.lock-stamp: $(AIRFLOW_LOCK) requirements/airflow.overrides $(LOCK_STAMP)
	$(BIN)/uv venv --quiet --clear --python $(BIN)/python $(AIRFLOW_VENV)
	VIRTUAL_ENV=$(AIRFLOW_VENV) $(BIN)/uv pip install --quiet --require-hashes --no-deps \
	  --compile-bytecode -r $(AIRFLOW_LOCK)
	touch $@

$(AIRFLOW_STAMP): $(AIRFLOW_VENV)/.lock-stamp pyproject.toml $(PROVIDER)/pyproject.toml
	VIRTUAL_ENV=$(AIRFLOW_VENV) $(BIN)/uv pip install --quiet --no-deps --no-build-isolation \
	  -e . -e ./$(PROVIDER)
	touch $@

airflow-venv: $(AIRFLOW_STAMP)

## The Kubeflow SDK (kubeflow 0.5.0, its SparkClient) in a venv of its own: it caps the Kubernetes
## client below dev.lock's; nothing of this checkout is installed into it (the test runs a script)
KUBEFLOW_VENV  := .venv-kubeflow
KUBEFLOW_LOCK  := requirements/kubeflow.lock
KUBEFLOW_STAMP := $(KUBEFLOW_VENV)/.installed-stamp

$(KUBEFLOW_STAMP): $(KUBEFLOW_LOCK) $(LOCK_STAMP)
	$(BIN)/uv venv --quiet --clear --python $(BIN)/python $(KUBEFLOW_VENV)
	VIRTUAL_ENV=$(KUBEFLOW_VENV) $(BIN)/uv pip install --quiet --require-hashes -r $(KUBEFLOW_LOCK)
	touch $@

kubeflow-venv: $(KUBEFLOW_STAMP)

## Jupyter (ipykernel, nbclient) with the thin Spark Connect client (pyspark-client) in a venv of
## its own, never in .venv (the images copy its packages): tests/realnode/test_sessions.py runs
## examples/session.ipynb in real kernels there. Locked against dev.lock (-c) like Airflow's;
## this checkout's sparkplane goes in with --no-deps (editable)
JUPYTER_VENV  := .venv-jupyter
JUPYTER_LOCK  := requirements/jupyter.lock
JUPYTER_STAMP := $(JUPYTER_VENV)/.installed-stamp

$(JUPYTER_VENV)/.lock-stamp: $(JUPYTER_LOCK) $(LOCK_STAMP)
	$(BIN)/uv venv --quiet --clear --python $(BIN)/python $(JUPYTER_VENV)
	VIRTUAL_ENV=$(JUPYTER_VENV) $(BIN)/uv pip install --quiet --require-hashes --no-deps \
	  -r $(JUPYTER_LOCK)
	touch $@

$(JUPYTER_STAMP): $(JUPYTER_VENV)/.lock-stamp pyproject.toml
	VIRTUAL_ENV=$(JUPYTER_VENV) $(BIN)/uv pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

jupyter-venv: $(JUPYTER_STAMP)

## lock: re-resolve the locks from pyproject.toml (keeps pins that still fit; UPGRADE=1: newest);
## an unchanged lock is left untouched (its time too, so the venv is not rebuilt)
COMPILE = $(BIN)/uv pip compile --universal --python-version 3.11 --generate-hashes \
	  --custom-compile-command 'make lock' --quiet
KEEP_IF_SAME = if cmp -s $(1).new $(1); then rm $(1).new; else mv $(1).new $(1); fi
lock: $(LOCK_STAMP)
	cp $(LOCK) $(LOCK).new
	$(COMPILE) pyproject.toml requirements/build.in --extra dev \
	  $(if $(filter 1,$(UPGRADE)),--upgrade) -o $(LOCK).new
	$(call KEEP_IF_SAME,$(LOCK))
	$(COMPILE) requirements/build.in -c $(LOCK) -o $(BUILD_LOCK).new
	$(call KEEP_IF_SAME,$(BUILD_LOCK))
	cp $(AIRFLOW_LOCK) $(AIRFLOW_LOCK).new
	$(COMPILE) requirements/airflow.in requirements/build.in pyproject.toml -c $(LOCK) \
	  --override requirements/airflow.overrides -o $(AIRFLOW_LOCK).new
	$(call KEEP_IF_SAME,$(AIRFLOW_LOCK))
	cp $(KUBEFLOW_LOCK) $(KUBEFLOW_LOCK).new
	$(COMPILE) requirements/kubeflow.in -o $(KUBEFLOW_LOCK).new
	$(call KEEP_IF_SAME,$(KUBEFLOW_LOCK))
	cp $(JUPYTER_LOCK) $(JUPYTER_LOCK).new
	$(COMPILE) requirements/jupyter.in requirements/build.in pyproject.toml -c $(LOCK) \
	  -o $(JUPYTER_LOCK).new
	$(call KEEP_IF_SAME,$(JUPYTER_LOCK))

## demo: bring the embedded local cluster up (with a real node) and run the main job on it.
demo: $(STAMP)
	$(BIN)/python examples/demo.py

## test: lint + types + unit beside the build of what the real-node suite needs (a cold build
## downloads modules and packages while the checks use the CPU; warm, the build is a no-op), then
## the two cluster suites side by side: integration (KWOK) and realnode (Spark really runs on a
## real node). They share nothing (their own clusters, ports and state dirs); each suite's output
## is printed in one piece when it ends (make -O). The real-node suite is the longer one, so what
## it needs is built first; the KWOK suite's own extras (Kueue, Helm, the other Spark versions'
## spark-submit) are built by its target, beside the real-node tests.
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target checks prebuild
	$(MAKE) --no-print-directory -j2 --output-sync=target integration realnode

checks: lint types unit

prebuild: $(STAMP)
ifneq ($(REALNODE),0)
	$(BIN)/sparkplane dev-cluster build --real-node
else
	$(BIN)/sparkplane dev-cluster build
endif

lint: $(STAMP)
	$(BIN)/ruff check src $(DEVCLUSTER) $(PROVIDER) tests benchmarks examples
	$(BIN)/ruff format --check src $(DEVCLUSTER) $(PROVIDER) tests benchmarks examples
	PYTHONPATH=$(PROVIDER)/src $(BIN)/lint-imports

## types: the provider is checked against Airflow's own annotations, in .venv-airflow
types: $(STAMP) $(AIRFLOW_STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --python-executable $(AIRFLOW_VENV)/bin/python $(PROVIDER)/src/sparkplane_airflow

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	@# the cold build takes many minutes: do it before pytest (whose per-test timeout would cut it)
	@# Traefik (the real-node suite's ingress controller, `dev-cluster traefik up`) is built here,
	@# beside the real-node suite and off its path; a session test waits on the build's lock
	if [ -z "$$SPARKPLANE_TEST_KUBECONFIG" ]; then $(BIN)/sparkplane dev-cluster build --kueue $(if $(filter 0,$(REALNODE)),,--traefik); fi
	$(BIN)/python -m sparkplane_devcluster.helmbin
	@# the parity tests run the spark-submit of every supported Spark version
	$(BIN)/python -m sparkplane_devcluster.sparksubmits
	$(BIN)/python -m pytest -q --durations=15 tests/integration

## realnode: the real-Spark suite on a dev cluster with a real node (kubelet, containerd, runc);
## its Airflow test (tests/realnode/test_airflow.py) runs Airflow from .venv-airflow, and
## tests/realnode/test_kubeflow_clients.py the Kubeflow SDK from .venv-kubeflow, and
## tests/realnode/test_sessions.py its notebook in Jupyter kernels from .venv-jupyter
realnode: $(STAMP) $(AIRFLOW_STAMP) $(KUBEFLOW_STAMP) $(JUPYTER_STAMP)
ifeq ($(REALNODE),0)
	@echo "REALNODE=0: the real-Spark suite (tests/realnode) was DESELECTED; nothing proves Spark runs"
else
	@# the cold builds (node components, images) take minutes: before pytest's per-test timeout
	$(BIN)/sparkplane dev-cluster build --real-node
	$(BIN)/python -m pytest -q --durations=15 tests/realnode
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
	$(BIN)/python -m sparkplane.manifests.gc deploy/gc
	$(BIN)/sparkplane operator manifests --write deploy
