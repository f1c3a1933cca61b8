"""Reliability figures for docs/reliability.md (issue 12): hostile inputs and injected faults.

Inputs: every entry of ``tests/hostile_inputs.py`` is submitted through the CLI into one fresh
namespace; an input is *refused* when the CLI exits 2 with its expected one-line message and no
traceback. Prints inputs tried / refused / objects created, and the slowest refusal.

Faults: the submitter (the CLI, a subprocess) SIGKILLs itself after each step of a submission
(``tests/crashing_cli.py``: after the driver pod, after each dependent), in native and
template mode; then one of: a retry with the same --submission-id, a retry after the half-made
driver finished, a retry while a ResourceQuota blocks completion, or ``gc`` past the grace
period. A fault is *survived* when the outcome is a complete app (every announced dependent
exists, owned by the driver) or nothing at all, never a success report for a half-made app;
*leaked* counts objects left that belong to no complete app.

    .venv/bin/python benchmarks/reliability.py --kubeconfig /tmp/sp-faults-state/kubeconfig
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from sparkplane.settings import Settings

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests import crashing_cli
from tests.hostile_inputs import PI, ROOT, Hostile, build

from sparkplane import yamlio
from sparkplane.errors import ValidationError
from sparkplane.kube import Kube, connect
from sparkplane.model.halfmade import dependents_of, owned_by
from sparkplane.spec import load_manifest, validate
from sparkplane.usecases.gc import collect_garbage
from sparkplane.vocab import SUBMISSION_LABEL

KINDS = (("v1", "Pod"), ("v1", "ConfigMap"), ("v1", "Service"), ("networking.k8s.io/v1", "Ingress"))


def cli(kubeconfig: str, *args: str, kill_after: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=kubeconfig)
    return crashing_cli.run(kill_after or None, *args, env=env, timeout=300)


def objects(kube: Kube, ns: str) -> list[dict[str, Any]]:
    return [
        o
        for api, kind in KINDS
        for o in kube.list(api, kind, ns)
        if o["metadata"]["name"] != "kube-root-ca.crt"
    ]


def fresh_namespace(kube: Kube) -> str:
    name = f"sp-rel-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.time() + 30
    while kube.get_or_none("v1", "ServiceAccount", "default", name) is None:
        if time.time() > deadline:
            raise SystemExit(f"namespace {name} has no default service account")
        time.sleep(0.2)
    return name


def inputs(kube: Kube, kubeconfig: str, tmp: Path) -> None:
    ns = fresh_namespace(kube)
    cases = build(tmp / "hostile")
    refused, slowest, bad, times = 0, (0.0, ""), [], []
    for case in cases:
        start = time.perf_counter()
        proc = cli(kubeconfig, *case.args, "-n", ns)
        took = time.perf_counter() - start
        one = not case.one_problem or ": 1 problem; nothing was created" in proc.stderr
        if (
            proc.returncode == 2
            and case.expect in proc.stderr
            and one
            and "Traceback" not in proc.stderr
        ):
            refused += 1
        else:
            bad.append(case.name)
        slowest = max(slowest, (took, case.name))
        times.append(took)
    made = len(objects(kube, ns))
    kube.delete("v1", "Namespace", ns)
    print(f"inputs tried {len(cases)}, refused {refused} (exit 2, one message), ", end="")
    print(f"objects created {made}")
    times.sort()
    print(f"CLI time per refusal: median {times[len(times) // 2]:.1f}s, ", end="")
    print(f"max {slowest[0]:.1f}s ({slowest[1]}); start-up included")
    in_process(cases)
    for name in bad:
        print(f"  NOT refused as expected: {name}")


def in_process(cases: list[Hostile]) -> None:
    """The refusal itself, without CLI start-up: read, parse, load and validate each -f file."""
    worst, most = (0.0, ""), (0, "")
    for case in cases:
        if case.args[:2] != ("submit", "-f") or not Path(case.args[2]).is_file():
            continue
        tracemalloc.start()
        start = time.perf_counter()
        try:
            validate(load_manifest(yamlio.load_mapping_file(case.args[2])))
        except ValidationError:
            pass
        worst = max(worst, (time.perf_counter() - start, case.name))
        most = max(most, (tracemalloc.get_traced_memory()[1], case.name))
        tracemalloc.stop()
    print(f"in-process refusal (read+parse+validate): max {worst[0]:.2f}s ({worst[1]}), ", end="")
    print(f"max allocated {most[0] / 2**20:.0f} MiB ({most[1]}; timed with tracemalloc on)")


def complete(kube: Kube, ns: str, sid: str) -> bool | None:
    """True: one driver with all its dependents; None: nothing left; False: half-made."""
    drivers = kube.list("v1", "Pod", ns, label_selector=f"{SUBMISSION_LABEL}={sid}")
    if not drivers:
        return None
    if len(drivers) > 1:
        return False
    uid = drivers[0]["metadata"]["uid"]
    refs = dependents_of(drivers[0]) or []
    return all(owned_by(kube.get_or_none(a, k, n, ns), uid) for a, k, n in refs)


def template_args(ns: str, sid: str) -> tuple[str, ...]:
    values = ROOT / "examples" / "template" / "values.env"
    return (
        *("--template", str(ROOT / "examples" / "template"), "--values", str(values)),
        *("--set", f"APP_NAME=t-{sid}", "--set", f"NAMESPACE={ns}"),
    )


def faults(kube: Kube, kubeconfig: str, tmp: Path) -> None:
    doc = yaml.safe_load(PI.read_text())
    ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann["sim.sparkplane.io/run-for"] = "10m"
    long_spec = tmp / "pi-long.yaml"
    long_spec.write_text(yaml.safe_dump(doc))
    ann["sim.sparkplane.io/run-for"] = "1s"
    short_spec = tmp / "pi-short.yaml"
    short_spec.write_text(yaml.safe_dump(doc))
    injected = survived = leaked = false_success = 0
    ns = fresh_namespace(kube)
    scenarios: list[tuple[str, tuple[str, ...], str, str]] = []
    sources: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("native", ("-f", str(long_spec))),
        ("template", ()),
    )
    for mode, source in sources:
        for step in ("owner", "dependent:1", "dependent:2", "dependent:3", "dependent:4"):
            scenarios.append((mode, source, step, "retry"))
    ann["sim.sparkplane.io/run-for"] = "10m"
    for step in ("pre-resources", "owner"):  # configMapSpecs: created before the driver
        doc["spec"]["configMapSpecs"] = [{"name": f"extra-{step}", "data": {"a": "b"}}]
        pre_spec = tmp / f"pi-pre-{step}.yaml"
        pre_spec.write_text(yaml.safe_dump(doc))
        scenarios.append(("native+pre", ("-f", str(pre_spec)), step, "retry"))
    doc["spec"].pop("configMapSpecs")
    scenarios.append(("native", ("-f", str(short_spec)), "owner", "retry-after-finish"))
    scenarios.append(("native", ("-f", str(long_spec)), "dependent:1", "gc"))
    scenarios.append(("native", ("-f", str(long_spec)), "owner", "quota-blocks-retry"))
    for i, (mode, source, step, then) in enumerate(scenarios):
        sid = f"f{i}-{uuid.uuid4().hex[:6]}"
        args = (*(source or template_args(ns, sid)), "-n", ns, "--submission-id", sid)
        crashed = cli(kubeconfig, "submit", *args, kill_after=step)
        if crashed.returncode != -signal.SIGKILL:
            continue  # fewer dependents than this step: no fault happened
        injected += 1
        if then == "retry-after-finish":
            deadline = time.time() + 60
            while time.time() < deadline:
                pods = kube.list("v1", "Pod", ns, label_selector=f"{SUBMISSION_LABEL}={sid}")
                if pods and (pods[0].get("status") or {}).get("phase") == "Succeeded":
                    break
                time.sleep(0.5)
        if then == "quota-blocks-retry":
            quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cm"}}
            quota["spec"] = {
                "hard": {"count/configmaps": str(len(kube.list("v1", "ConfigMap", ns)))}
            }
            kube.create(quota, ns)
            time.sleep(3)  # quota usage computed by the controller
        if then == "gc":
            collect_garbage(
                kube, ns, default_ttl=None, grace=timedelta(0), settings=Settings.load()
            )
            time.sleep(2)
            outcome, said_ok = complete(kube, ns, sid), False
        else:
            retry = cli(kubeconfig, "submit", *args)
            outcome, said_ok = complete(kube, ns, sid), retry.returncode == 0
            if retry.returncode == 7:  # removed: wait for the deletion to finish
                deadline = time.time() + 60
                while complete(kube, ns, sid) is not None and time.time() < deadline:
                    time.sleep(0.5)
                outcome = complete(kube, ns, sid)
        if then == "quota-blocks-retry":
            kube.delete("v1", "ResourceQuota", "cm", ns)
        ok = (outcome is True and said_ok) or (outcome is None and not said_ok)
        survived += ok
        false_success += said_ok and outcome is not True
        shown = {True: "complete", None: "removed", False: "HALF-MADE"}[outcome]
        print(f"  {mode:8} kill after {step:12} then {then:18} -> {shown}")
    # leaked: anything whose owner is not a complete app
    drivers = {
        p["metadata"]["uid"]
        for p in kube.list("v1", "Pod", ns)
        if (p["metadata"].get("labels") or {}).get(SUBMISSION_LABEL)
    }
    for obj in objects(kube, ns):
        owners = {r.get("uid") for r in obj["metadata"].get("ownerReferences") or []}
        if obj["kind"] != "Pod" and not owners & drivers:
            leaked += 1
    kube.delete("v1", "Namespace", ns)
    print(f"faults injected {injected}, survived {survived}, leaked objects {leaked}, ", end="")
    print(f"false successes {false_success}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kubeconfig", default=os.environ.get("SPARKPLANE_KUBECONFIG"), required=False
    )
    parser.add_argument("--only", choices=("inputs", "faults"))
    args = parser.parse_args()
    if not args.kubeconfig:
        raise SystemExit(
            "give --kubeconfig (e.g. a dev cluster's: sparkplane dev-cluster kubeconfig)"
        )
    kube = Kube(connect(kubeconfig=args.kubeconfig))
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "inputs"):
            inputs(kube, args.kubeconfig, Path(tmp))
        if args.only in (None, "faults"):
            faults(kube, args.kubeconfig, Path(tmp))
    kube.close()


if __name__ == "__main__":
    main()
