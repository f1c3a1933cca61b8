"""tests/crashing_cli.py kills right after the named step and leaves the same objects each time.

The crash-safety integration tests depend on it: the kill must be a real SIGKILL, the owner's
announced order must decide which dependents exist (they are created concurrently), and nothing
after the step may be created. Checked here with a stand-in ``create`` in a child process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPENDENTS = ["a", "b", "c", "d"]

CHILD = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from sparkplane.vocab import DEPENDENTS_KEY, PENDING_OWNER_KEY
from tests.crashing_cli import _KillAfter

step, names = sys.argv[1], sys.argv[2:]

def create(kube, obj, namespace=None):
    print(obj["metadata"]["name"], flush=True)
    return obj

def obj(kind, name, **annotations):
    return {"apiVersion": "v1", "kind": kind,
            "metadata": {"name": name, "annotations": annotations}}

made = _KillAfter(step).wrap(create)
made(None, obj("ConfigMap", "pre", **{PENDING_OWNER_KEY: "owner"}))
refs = json.dumps([["v1", "ConfigMap", n] for n in names])
made(None, obj("Pod", "owner", **{DEPENDENTS_KEY: refs}))
with ThreadPoolExecutor(len(names)) as pool:  # the last announced first: the order still holds
    list(pool.map(lambda n: made(None, obj("ConfigMap", n)), reversed(names)))
print("survived", flush=True)
"""


def child(step: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, step, *DEPENDENTS],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("step", "created"),
    [
        ("pre-resources", ["pre"]),
        ("owner", ["pre", "owner"]),
        ("dependent:1", ["pre", "owner", "a"]),
        ("dependent:3", ["pre", "owner", "a", "b", "c"]),
    ],
)
def test_killed_right_after_the_step(step: str, created: list[str]) -> None:
    done = child(step)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.split() == created


def test_a_step_never_reached_is_no_kill() -> None:
    done = child("dependent:9")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pre", "owner", *DEPENDENTS, "survived"]


def test_an_unknown_step_is_refused() -> None:
    done = child("dependent:x")
    assert done.returncode == 1 and "unknown step 'dependent:x'" in done.stderr
