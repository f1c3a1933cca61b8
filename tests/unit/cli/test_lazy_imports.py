"""Start-up: a command imports only what it needs (figures: benchmarks/cli_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

PROBE = """
import json, sys
from sparkplane.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""
HEAVY = (
    "kubernetes.client",  # the bare package is registered lazily (sparkplane.cli.startup)
    "rich",
    "prometheus_client",
    "aiohttp",
    "sparkplane.operator",
    "sparkplane.staging",
)


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=False
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], {
        m.split(".")[0] if not m.startswith(("sparkplane", "kubernetes")) else m
        for m in result["modules"]
    }


def _loaded(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def test_help_imports_no_command_module():
    code, modules = _run(["--help"])
    assert code == 0
    assert not [
        h
        for h in (*HEAVY, "sparkplane.kube", "sparkplane.cli.apps", "sparkplane_devcluster")
        if _loaded(modules, h)
    ]


def test_get_apps_imports_neither_rendering_nor_staging_nor_the_operator(tmp_path: Path):
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    code, modules = _run(["get", "apps"], env={"KUBECONFIG": str(path), "PATH": "/usr/bin:/bin"})
    assert code == 11  # nothing listens there: one message, the documented code
    unwanted = (
        *HEAVY[1:],
        "sparkplane.render",
        "sparkplane.spec",
        "sparkplane.templates",
        "kubernetes.config",  # the official kubeconfig loader: requests, oauthlib, ~0.1 s
        "requests_oauthlib",
        "oauthlib",
    )
    assert not [h for h in unwanted if _loaded(modules, h)]


def test_the_lazy_kubernetes_package_still_offers_every_sub_package():
    probe = (
        "import sparkplane.cli, sys, kubernetes;"
        "assert 'kubernetes.config' not in sys.modules;"
        "from kubernetes import config;"
        "print(kubernetes.config.load_kube_config.__name__, kubernetes.watch.Watch.__name__,"
        " kubernetes.__version__)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    name, watch, version = done.stdout.split()
    assert (name, watch) == ("load_kube_config", "Watch")
    assert version[0].isdigit()
