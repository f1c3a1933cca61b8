"""Issue 26 from the tenant's side (findings 3, 5, 7 and 8): identity, never content.

Every probe runs as the tenant: the client role (``sparkplane rbac client``) made into a
kubeconfig with ``sparkplane kubeconfig --service-account``; the operator runs in-process with
its shipped RBAC (``sparkplane rbac operator``), never as admin; the admin only sets up and runs
``sparkplane gc -A`` (the admin's deputy the attack aimed at). KWOK plays the drivers.

- 3: a forged archive (meta.json naming another namespace's app and an app id) and
  ``sparkplane-history`` settings pointing at a directory of the pruning machine: neither
  ``gc -A`` nor the operator's prune round deletes the other namespace's archive or that
  directory; the tenant's own expired archive and event log still go.
- 5: naming an existing ConfigMap and Service in ``configMapSpecs`` and
  ``driverServiceIngressList`` fails the attempt with a status and an Event naming them; they
  survive the release. The app's own ConfigMap is created and deleted.
- 7: ``history up`` gives each namespace its own store; two namespaces on one directory get a
  warning from the CLI and a Warning Event from the operator.
- 8: a SparkApplication deleted and created again under its name (same pod names) never takes
  its predecessor's lingering driver for its own, and runs to completion.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sparkplane.errors import ForbiddenError, NotFoundError
from sparkplane.history import pack
from sparkplane.history import server as history
from sparkplane.history.archive import META, ArchiveMeta
from sparkplane.history.kube_store import KubeStore
from sparkplane.history.server import EventLogStore
from sparkplane.kube import Kube
from sparkplane.kube.config import connect
from sparkplane.operator.deploy.install import install_crds
from sparkplane.security.rbac import render
from sparkplane_devcluster.simulator import DriverSimulator
from tests.integration.helpers import delete_namespace, wait_for
from tests.integration.operator_helpers import API, running_operator, spark_app, wait_state
from tests.integration.test_cli import run

pytestmark = pytest.mark.integration
HOLD = "sparkplane.io/test-hold"  # a finalizer: keeps a deleted pod visible, like a grace period
ENDED = ("ResourceReleased", "TerminatedWithoutReleaseResources")
Identity = Callable[..., tuple[Path, Kube]]


@pytest.fixture(scope="session")
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.fixture
def tenant_ns(kube: Kube) -> Iterator[str]:
    name = f"sp-tenant-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    delete_namespace(kube, name)


@pytest.fixture
def identity(kubeconfig: Path, kube: Kube, tmp_path: Path) -> Iterator[Identity]:
    """``identity(role, namespace, *targets)``: the role as the CLI ships it, applied by the
    admin, and a kubeconfig plus a gateway acting as it (RBAC visible before it returns)."""
    made: list[tuple[Kube, list[dict[str, Any]]]] = []

    def make(role: str, namespace: str, *targets: str) -> tuple[Path, Kube]:
        extra = [f"--target-namespace={t}" for t in targets]
        run(kubeconfig, "rbac", role, "-n", namespace, *extra, "--apply")
        objects = [o.body for o in render(role, namespace, namespaces=targets)]
        account = objects[0]["metadata"]["name"]
        out = tmp_path / f"{role}-{namespace}.kubeconfig"
        run(kubeconfig, "kubeconfig", "--service-account", account, "-n", namespace, "-o", str(out))
        client = Kube(connect(kubeconfig=out))
        for ns in targets or (namespace,):
            wait_for(
                lambda ns=ns: _allowed(lambda: client.list("v1", "Pod", ns)),
                timeout=30,
                what=f"{role} RBAC in {ns}",
            )
        made.append((client, objects))
        return out, client

    yield make
    for client, objects in made:
        client.close()
        for obj in objects:
            if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
                try:
                    kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
                except NotFoundError:
                    pass


def _allowed(call: Callable[[], object]) -> bool:
    try:
        call()
    except ForbiddenError:
        return False
    return True


@contextmanager
def simulator(kube: Kube, namespace: str) -> Iterator[None]:
    """KWOK's stand-in for Spark (drivers making executors, logs): the platform, not a tenant."""
    sim = DriverSimulator(kube, namespace).start()
    try:
        yield
    finally:
        sim.stop()


def _archive_files(meta: ArchiveMeta) -> dict[str, bytes]:
    return {"driver.log": f"the log of {meta.app}\n".encode(), META: meta.to_json()}


def _meta(namespace: str, app: str, *, ago: timedelta, retain: int, app_id: str) -> ArchiveMeta:
    return ArchiveMeta(
        namespace=namespace,
        app=app,
        driver_pod=f"{app}-driver",
        archived_at=(datetime.now(UTC) - ago).isoformat(timespec="seconds"),
        reason="killed",
        retain_seconds=retain,
        app_id=app_id,
    )


def _archive(kube: Kube, namespace: str, app: str) -> dict[str, Any] | None:
    return kube.get_or_none("v1", "ConfigMap", pack.configmap_name(app), namespace)


def test_forged_archives_and_history_settings_move_neither_gc_nor_the_operator(
    kubeconfig: Path,
    kube: Kube,
    namespace: str,
    tenant_ns: str,
    tmp_path: Path,
    crds: None,
    identity: Identity,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    victim = namespace
    _, tenant = identity("client", tenant_ns)
    # the victim's archive, fresh (kept a week)
    KubeStore(kube, [victim]).replace(
        f"{victim}/pi/",
        _archive_files(_meta(victim, "pi", ago=timedelta(0), retain=604800, app_id="spark-v")),
    )
    theirs = _archive(kube, victim, "pi")
    assert theirs is not None
    # a directory of the machine doing the pruning, and the pruner's own event-log root
    precious = tmp_path / "precious"
    (precious / "spark-target").mkdir(parents=True)
    (precious / "spark-target" / "keep").write_text("keep")
    root = tmp_path / "events"
    (root / tenant_ns).mkdir(parents=True)

    def plant() -> None:
        """As the tenant: forged archives naming the victim (expired, app id = the directory
        to remove), settings pointing the event logs at ``precious``, an expired archive of
        its own whose event log sits in its directory under the pruner's root."""
        forged = _meta(victim, "pi", ago=timedelta(days=30), retain=1, app_id="spark-target")
        tenant.create(pack.configmap(tenant_ns, "pi", _archive_files(forged)), tenant_ns)
        other = pack.configmap(tenant_ns, "pi", _archive_files(forged))
        other["metadata"]["name"] = "innocent-looking"  # claims app "pi" under another name
        tenant.create(other, tenant_ns)
        own = _meta(tenant_ns, "own", ago=timedelta(days=30), retain=1, app_id="spark-own")
        tenant.create(pack.configmap(tenant_ns, "own", _archive_files(own)), tenant_ns)
        (root / tenant_ns / "eventlog_v2_spark-own").mkdir()
        settings = history.to_configmap(tenant_ns, EventLogStore(host_path=str(precious)))
        tenant.create(settings, tenant_ns)

    def unharmed() -> None:
        kept = _archive(kube, victim, "pi")
        assert kept is not None and kept["metadata"]["uid"] == theirs["metadata"]["uid"]
        assert (precious / "spark-target" / "keep").read_text() == "keep"
        assert _archive(kube, tenant_ns, "pi") is not None  # the forgery is skipped, not trusted

    plant()
    env = {
        "SPARKPLANE_LOG_ARCHIVE": "kube",
        "SPARKPLANE_EVENT_LOG_ROOT": str(root),
        "SPARKPLANE_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = run(kubeconfig, "gc", "-A", env_extra=env)  # the admin's run
    unharmed()
    assert f"log archive of {tenant_ns}/pi not pruned: its meta.json names {victim}/pi" in (
        out.stderr
    )
    assert _archive(kube, tenant_ns, "own") is None  # its own expired archive still goes
    assert not (root / tenant_ns / "eventlog_v2_spark-own").exists()  # and its event log

    # the operator, with its shipped RBAC over both namespaces, on its own prune rounds
    op_config, operator = identity("operator", victim, victim, tenant_ns)
    own = _meta(tenant_ns, "own2", ago=timedelta(days=30), retain=1, app_id="spark-own2")
    tenant.create(pack.configmap(tenant_ns, "own2", _archive_files(own)), tenant_ns)
    (root / tenant_ns / "spark-own2").write_text("event log")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with running_operator(
        kube,
        victim,
        operator_kube=operator,
        simulate=False,
        namespaces=(victim, tenant_ns),
        archive_prune_seconds=1,
        resync_seconds=1,
    ):
        wait_for(
            lambda: _archive(kube, tenant_ns, "own2") is None,
            timeout=60,
            what="the operator's prune round",
        )
        time.sleep(2)  # and another round
    unharmed()
    assert not (root / tenant_ns / "spark-own2").exists()
    assert op_config.exists()


def test_namespaces_get_their_own_event_log_store_and_a_shared_one_is_reported(
    kubeconfig: Path,
    kube: Kube,
    namespace: str,
    tenant_ns: str,
    tmp_path: Path,
    crds: None,
    identity: Identity,
) -> None:
    for ns in (namespace, tenant_ns):  # the platform admin's set-up of each namespace
        up = run(kubeconfig, "history", "up", "-n", ns)
    assert namespace not in up.stderr  # no warning that the two share a store
    paths = {
        ns: history.from_configmap(kube.get("v1", "ConfigMap", history.NAME, ns)).host_path
        for ns in (namespace, tenant_ns)
    }
    assert paths[namespace] != paths[tenant_ns], paths  # before: one node directory for all
    assert all(str(path).endswith(f"/{ns}") for ns, path in paths.items()), paths
    deployment = kube.get("apps/v1", "Deployment", history.NAME, tenant_ns)
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["hostPath"]["path"] == paths[tenant_ns]

    # an admin puts both on one directory: the CLI warns (it may list every namespace) ...
    shared = str(tmp_path / "one-store")
    run(kubeconfig, "history", "up", "-n", namespace, "--host-path", shared)
    up = run(kubeconfig, "history", "up", "-n", tenant_ns, "--host-path", shared)
    assert f"warning: {tenant_ns} shares its event-log store (hostPath {shared})" in up.stderr
    # ... and so does the operator (shipped RBAC), with a Warning Event in each namespace
    _, operator = identity("operator", namespace, namespace, tenant_ns)
    with running_operator(
        kube,
        namespace,
        operator_kube=operator,
        simulate=False,
        namespaces=(namespace, tenant_ns),
        archive_prune_seconds=1,
        resync_seconds=1,
    ):
        for ns in (namespace, tenant_ns):
            event = wait_for(
                lambda ns=ns: next(
                    (
                        e
                        for e in kube.list("v1", "Event", ns)
                        if e.get("reason") == "SharedEventLogStore"
                    ),
                    None,
                ),
                timeout=30,
                what=f"the SharedEventLogStore event in {ns}",
            )
            assert event["type"] == "Warning" and shared in event["message"]
            assert event["involvedObject"]["name"] == history.NAME


def _messages(cr: dict[str, Any]) -> str:
    entries = ((cr.get("status") or {}).get("stateTransitionHistory") or {}).values()
    return " | ".join(str(e.get("message", "")) for e in entries)


def test_the_operator_releases_only_what_its_app_controls(
    kube: Kube, namespace: str, crds: None, identity: Identity
) -> None:
    _, tenant = identity("client", namespace)
    _, operator = identity("operator", namespace)
    # someone else's ConfigMap and Service in the namespace (the admin's, say)
    cm = kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "precious-cm"}},
        namespace,
    )
    svc = kube.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "precious-svc"},
            "spec": {"ports": [{"port": 80}]},
        },
        namespace,
    )
    grab = spark_app("grab", sim={"outcome": "Succeeded", "run-for": "1s"})
    grab["spec"]["configMapSpecs"] = [{"name": "precious-cm", "data": {"x": "y"}}]
    backend = {"service": {"name": "precious-svc", "port": {"number": 80}}}
    ing = kube.create(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "precious-ing"},
            "spec": {"defaultBackend": backend},
        },
        namespace,
    )
    grab["spec"]["driverServiceIngressList"] = [
        {
            "serviceMetadata": {"name": "precious-svc"},
            "serviceSpec": {"ports": [{"port": 81}]},
            "ingressMetadata": {"name": "precious-ing"},
            "ingressSpec": {"defaultBackend": {"service": {"name": "x", "port": {"number": 1}}}},
        }
    ]
    mine = spark_app("mine", sim={"outcome": "Succeeded", "run-for": "1s"})
    mine["spec"]["configMapSpecs"] = [{"name": "mine-cm", "data": {"x": "y"}}]
    with (
        running_operator(kube, namespace, operator_kube=operator, simulate=False),
        simulator(kube, namespace),
    ):
        tenant.create(grab, namespace)
        cr = wait_state(kube, namespace, "grab", *ENDED, timeout=60)
        messages = _messages(cr)
        assert "already exists and is not this resource's" in messages, messages
        assert any(f"precious-{k}" in messages for k in ("cm", "svc", "ing")), messages
        events = wait_for(  # the recorder posts it from its own threads, after the write
            lambda: [
                e
                for e in kube.list("v1", "Event", namespace)
                if e["involvedObject"].get("name") == "grab" and "already exists" in e["message"]
            ],
            timeout=30,
            what="the Warning Event naming the object that is not the app's",
        )
        assert events[0]["type"] == "Warning"

        tenant.create(mine, namespace)
        wait_for(
            lambda: kube.get_or_none("v1", "ConfigMap", "mine-cm", namespace),
            timeout=30,
            what="the app's own ConfigMap",
        )
        wait_state(kube, namespace, "mine", *ENDED, timeout=60)
        wait_for(
            lambda: kube.get_or_none("v1", "ConfigMap", "mine-cm", namespace) is None,
            timeout=30,
            what="its own ConfigMap released",
        )
    kept_cm = kube.get("v1", "ConfigMap", "precious-cm", namespace)
    kept_svc = kube.get("v1", "Service", "precious-svc", namespace)
    assert kept_cm["metadata"]["uid"] == cm["metadata"]["uid"] and not kept_cm.get("data")
    assert kept_svc["metadata"]["uid"] == svc["metadata"]["uid"]
    assert kept_svc["spec"]["ports"][0]["port"] == 80
    kept_ing = kube.get("networking.k8s.io/v1", "Ingress", "precious-ing", namespace)
    assert kept_ing["metadata"]["uid"] == ing["metadata"]["uid"]
    assert kept_ing["spec"]["defaultBackend"] == backend


def test_a_recreated_application_never_takes_its_predecessors_pods(
    kube: Kube, namespace: str, crds: None, identity: Identity
) -> None:
    _, tenant = identity("client", namespace)
    _, operator = identity("operator", namespace)
    with (
        running_operator(kube, namespace, operator_kube=operator, simulate=False),
        simulator(kube, namespace),
    ):
        tenant.create(spark_app("again", sim={"run-for": "1h"}), namespace)
        first = wait_state(kube, namespace, "again", "RunningHealthy", timeout=60)
        driver = "again-0-driver"
        kube.patch("v1", "Pod", driver, {"metadata": {"finalizers": [HOLD]}}, namespace)
        try:
            tenant.delete(API, "SparkApplication", "again", namespace)
            wait_for(
                lambda: kube.get_or_none(API, "SparkApplication", "again", namespace) is None,
                timeout=30,
                what="the first application gone",
            )
            tenant.create(
                spark_app("again", sim={"outcome": "Succeeded", "run-for": "2s"}), namespace
            )
            second = wait_state(kube, namespace, "again", "DriverRequested", timeout=30)
            assert second["metadata"]["uid"] != first["metadata"]["uid"]
            # the predecessor's driver (same name, still Running while it is deleted) lingers:
            # the new application must wait for its own, not adopt that one's state
            time.sleep(4)
            cr = kube.get(API, "SparkApplication", "again", namespace)
            assert cr["status"]["currentState"]["currentStateSummary"] == "DriverRequested", (
                _messages(cr)
            )
        finally:
            kube.patch("v1", "Pod", driver, {"metadata": {"finalizers": None}}, namespace)
        own = wait_for(
            lambda: (
                (p := kube.get_or_none("v1", "Pod", driver, namespace))
                and second["metadata"]["uid"]
                in {r["uid"] for r in p["metadata"].get("ownerReferences") or []}
                and p
            ),
            timeout=90,
            what="the new application's own driver",
        )
        assert own["metadata"]["uid"]
        done = wait_state(kube, namespace, "again", *ENDED, "Failed", timeout=90)
    states = [
        e["currentStateSummary"]
        for _, e in sorted(
            done["status"]["stateTransitionHistory"].items(), key=lambda kv: int(kv[0])
        )
    ]
    assert "Succeeded" in states and "Failed" not in states, _messages(done)
