"""A submitter killed between its steps (issue 12): the retry with the same --submission-id
completes or removes the half-made app and never calls it submitted; `gc` removes half-made
drivers after a grace period and never touches system namespaces across all namespaces.

The kill is real: the CLI runs as a subprocess (``tests/crashing_cli.py``) that wraps the gateway's
``create`` and SIGKILLs itself right after the named step, leaving exactly what a crash leaves."""

from __future__ import annotations

import os
import signal
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.kube import Kube
from sparkplane.model.halfmade import dependents_of, owned_by
from sparkplane.settings import Settings
from sparkplane.usecases.gc import collect_garbage
from sparkplane.vocab import DEPENDENTS_CREATED_KEY, DEPENDENTS_KEY, SUBMISSION_LABEL
from tests import crashing_cli
from tests.hostile_inputs import PI
from tests.integration.helpers import pod, wait_for


def cli(
    kubeconfig: Path, *args: str, kill_after: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``sparkplane ARGS`` in a child process, SIGKILLed right after ``kill_after`` if given."""
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    return crashing_cli.run(kill_after, *args, env=env)


def spec(tmp_path: Path, run_for: str) -> Path:
    doc = yaml.safe_load(PI.read_text())
    ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann["sim.sparkplane.io/run-for"] = run_for
    path = tmp_path / f"pi-{run_for}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def drivers(kube: Kube, namespace: str, sid: str) -> list[dict[str, Any]]:
    return kube.list("v1", "Pod", namespace, label_selector=f"{SUBMISSION_LABEL}={sid}")


def missing(kube: Kube, namespace: str, driver: dict[str, Any]) -> list[str]:
    uid = driver["metadata"]["uid"]
    refs = dependents_of(driver) or []
    assert refs, f"driver has no {DEPENDENTS_KEY} annotation"
    return [
        f"{kind}/{name}"
        for api, kind, name in refs
        if not owned_by(kube.get_or_none(api, kind, name, namespace), uid)
    ]


@pytest.mark.parametrize("step", ["owner", "dependent:1", "dependent:2"])
def test_retry_completes_a_submission_killed_after_each_step(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path, step: str
) -> None:
    path, sid = spec(tmp_path, "10m"), f"crash-{step.replace(':', '-')}"
    args = ("submit", "-f", str(path), "-n", namespace, "--submission-id", sid)
    crashed = cli(kubeconfig, *args, kill_after=step)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    [half] = drivers(kube, namespace, sid)
    lost = missing(kube, namespace, half)
    assert lost, "the kill left nothing missing"

    retry = cli(kubeconfig, *args)
    assert retry.returncode == 0, retry.stderr
    assert "completed an interrupted submission" in retry.stderr
    [driver] = drivers(kube, namespace, sid)
    assert driver["metadata"]["uid"] == half["metadata"]["uid"]  # the same app, not a second
    assert missing(kube, namespace, driver) == []

    again = cli(kubeconfig, *args)
    assert again.returncode == 0 and "already submitted" in again.stderr
    assert "completed" not in again.stderr


def test_retry_removes_a_half_made_app_that_already_finished(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    path, sid = spec(tmp_path, "1s"), "crash-finished"
    args = ("submit", "-f", str(path), "-n", namespace, "--submission-id", sid)
    assert cli(kubeconfig, *args, kill_after="owner").returncode == -signal.SIGKILL
    wait_for(
        lambda: drivers(kube, namespace, sid)[0].get("status", {}).get("phase") == "Succeeded",
        timeout=60,
        what="the half-made driver to finish",
    )
    retry = cli(kubeconfig, *args)
    assert retry.returncode == 7, retry.stderr
    assert "already finished (Succeeded): removed it" in retry.stderr
    assert "Submit again" in retry.stderr
    wait_for(lambda: not drivers(kube, namespace, sid), timeout=60, what="driver removed")
    fresh = cli(kubeconfig, *args)
    assert fresh.returncode == 0 and "submitted" in fresh.stderr, fresh.stderr
    [driver] = drivers(kube, namespace, sid)
    assert missing(kube, namespace, driver) == []


def test_retry_that_cannot_complete_rolls_back(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    path, sid = spec(tmp_path, "10m"), "crash-quota"
    args = ("submit", "-f", str(path), "-n", namespace, "--submission-id", sid)
    assert cli(kubeconfig, *args, kill_after="owner").returncode == -signal.SIGKILL
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cm"}}
    quota["spec"] = {"hard": {"count/configmaps": "1"}}  # kube-root-ca.crt uses it up
    kube.create(quota, namespace)
    wait_for(
        lambda: (kube.get("v1", "ResourceQuota", "cm", namespace).get("status") or {}).get("used"),
        timeout=30,
        what="quota usage",
    )
    retry = cli(kubeconfig, *args)
    assert retry.returncode == 7, retry.stderr
    assert "completing the half-made" in retry.stderr and "ResourceQuota exceeded" in retry.stderr
    wait_for(lambda: not drivers(kube, namespace, sid), timeout=60, what="driver removed")


def test_gc_removes_half_made_drivers_after_the_grace_period(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    path = spec(tmp_path, "10m")
    base = ("submit", "-f", str(path), "-n", namespace, "--submission-id")
    assert cli(kubeconfig, *base, "half", kill_after="owner").returncode == -signal.SIGKILL
    assert cli(kubeconfig, *base, "whole").returncode == 0
    # within the grace period (default 5 min) nothing is touched
    shown = cli(kubeconfig, "gc", "-n", namespace, "--dry-run", "-o", "yaml")
    rows = list(yaml.safe_load_all(shown.stdout))
    assert shown.returncode == 0 and len(rows) == 2 and not any(r["delete"] for r in rows)
    [half] = drivers(kube, namespace, "half")  # before gc: once deleted it may be gone at once
    [whole] = drivers(kube, namespace, "whole")  # the submitter recorded its last dependent
    assert whole["metadata"]["annotations"].get(DEPENDENTS_CREATED_KEY)
    assert DEPENDENTS_CREATED_KEY not in half["metadata"]["annotations"]
    decisions = collect_garbage(
        kube, namespace, default_ttl=None, grace=timedelta(0), settings=Settings.load()
    )
    deleted = {d.name: d.reason for d in decisions if d.delete}
    assert list(deleted) == [half["metadata"]["name"]]
    assert "half-made" in deleted[half["metadata"]["name"]]
    wait_for(lambda: not drivers(kube, namespace, "half"), timeout=60, what="half-made gone")
    assert len(drivers(kube, namespace, "whole")) == 1


def test_gc_across_namespaces_never_touches_system_namespaces(kube: Kube, namespace: str) -> None:
    refs = '[["v1","ConfigMap","never-made"]]'

    def orphan(name: str) -> dict[str, Any]:
        return pod(name, labels={"spark-role": "driver"}, annotations={DEPENDENTS_KEY: refs})

    kube.create(orphan("faults-orphan-driver"), namespace)
    kube.create(orphan("faults-orphan-driver"), "kube-system")
    try:
        decisions = collect_garbage(
            kube, None, default_ttl=None, grace=timedelta(0), settings=Settings.load()
        )
        deleted = {(d.namespace, d.name) for d in decisions if d.delete}
        assert (namespace, "faults-orphan-driver") in deleted
        assert not any(ns == "kube-system" for ns, _ in deleted)
        assert kube.get_or_none("v1", "Pod", "faults-orphan-driver", "kube-system") is not None
        named = collect_garbage(
            kube,
            "kube-system",
            default_ttl=None,
            grace=timedelta(0),
            dry_run=True,
            settings=Settings.load(),
        )
        assert [d.name for d in named if d.delete] == ["faults-orphan-driver"]  # explicit -n
    finally:
        kube.delete("v1", "Pod", "faults-orphan-driver", "kube-system", grace_period_seconds=0)


@pytest.mark.parametrize("step", ["owner", "dependent:2", "dependent:4"])
def test_config_map_specs_of_a_killed_submission_are_owned_completed_or_collected(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path, step: str
) -> None:
    """configMapSpecs used to be created before the driver, unowned: a submission killed right
    after them, never retried, leaked them forever (issue 26, finding 8). Now they are the
    driver's dependents from the start: a retry completes the app, and without one ``gc``
    removes the half-made driver and the garbage collector whatever it owned."""
    doc = yaml.safe_load(spec(tmp_path, "10m").read_text())
    doc["spec"]["configMapSpecs"] = [{"name": "extra-conf", "data": {"a": "b"}}]
    path = tmp_path / "pi-extra.yaml"
    path.write_text(yaml.safe_dump(doc))
    sid = f"extra-{step.replace(':', '-')}"
    args = ("submit", "-f", str(path), "-n", namespace, "--submission-id", sid)
    assert cli(kubeconfig, *args, kill_after=step).returncode == -signal.SIGKILL
    [driver] = drivers(kube, namespace, sid)
    left = kube.get_or_none("v1", "ConfigMap", "extra-conf", namespace)
    assert left is None or owned_by(left, driver["metadata"]["uid"])  # never unowned
    assert (left is not None) == (step == "dependent:4")  # the 4th dependent (after 3 others)
    if step == "dependent:2":  # this one is retried: completed, the ConfigMap owned
        retry = cli(kubeconfig, *args)
        assert retry.returncode == 0, retry.stderr
        assert missing(kube, namespace, driver) == []
        made = kube.get("v1", "ConfigMap", "extra-conf", namespace)
        assert owned_by(made, driver["metadata"]["uid"]) and made["data"] == {"a": "b"}
        return
    decisions = collect_garbage(
        kube, namespace, default_ttl=None, grace=timedelta(0), settings=Settings.load()
    )
    assert [d.name for d in decisions if d.delete] == [driver["metadata"]["name"]]
    wait_for(
        lambda: (
            kube.get_or_none("v1", "ConfigMap", "extra-conf", namespace) is None
            and not drivers(kube, namespace, sid)
        ),
        timeout=60,
        what="nothing left of the killed submission",
    )


def test_an_existing_config_map_is_never_adopted_by_a_submission(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    """Naming someone's ConfigMap in configMapSpecs fails the submission (it used to be adopted,
    then deleted with the driver) and leaves that ConfigMap as it was."""
    theirs = kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "theirs"},
            "data": {"keep": "me"},
        },
        namespace,
    )
    doc = yaml.safe_load(spec(tmp_path, "10m").read_text())
    doc["spec"]["configMapSpecs"] = [{"name": "theirs", "data": {"a": "b"}}]
    path = tmp_path / "pi-theirs.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = cli(kubeconfig, "submit", "-f", str(path), "-n", namespace, "--submission-id", "grab")
    assert out.returncode != 0 and "theirs" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not drivers(kube, namespace, "grab")
    kept = kube.get("v1", "ConfigMap", "theirs", namespace)
    assert kept["metadata"]["uid"] == theirs["metadata"]["uid"] and kept["data"] == {"keep": "me"}
    assert not kept["metadata"].get("ownerReferences")
