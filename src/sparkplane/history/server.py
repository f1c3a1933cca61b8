"""Event logs and the Spark History Server, pure parts: the namespace's event-log store, the
sparkConf that turns event logging on, and the History Server's Deployment and Service.

A namespace's store is the ConfigMap ``sparkplane-history`` (written by ``sparkplane history
up``): the log directory URI (``file:/spark-events`` on a shared volume, or the user's own
``s3a://``/``gs://``/``abfs://``/``hdfs://`` URI), the volume drivers mount for a ``file:`` URI
(hostPath or PVC), whether every app gets event logs by default, and the retention the
History Server's cleaner applies. An app opts in with ``spark.eventLog.enabled: "true"`` (the
directory and volume are filled in) or by the namespace default; ``"false"`` opts out.

Each namespace has its own store by default (:func:`default_host_path`: ``<DEFAULT_ROOT>/<ns>``):
a History Server shows every app of its directory, and drivers mount it read-write, so two
namespaces on one directory would see (and could change) each other's apps.
:func:`shared_stores` finds namespaces whose stores overlap (the CLI and the operator warn).
Called by :mod:`.history_kube` and the CLI. Pure: no I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

NAME = "sparkplane-history"
PORT = 18080
MOUNT = "/spark-events"
VOLUME = "spark-events"
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "sparkplane"}
ENABLED = "spark.eventLog.enabled"
#: Where the per-namespace stores of ``history up`` live on a node (the dev cluster's default).
DEFAULT_ROOT = "/var/lib/sparkplane/spark-events"
Obj = dict[str, Any]


def default_host_path(namespace: str) -> str:
    """The node directory of ``namespace``'s event logs when none is given: its own."""
    return f"{DEFAULT_ROOT}/{namespace}"


@dataclass(frozen=True)
class EventLogStore:
    """Where a namespace's event logs go and how long the History Server keeps them."""

    log_dir: str = f"file:{MOUNT}"
    host_path: str | None = None
    claim: str | None = None
    default: bool = False
    retention: timedelta = timedelta(days=7)
    s3_endpoint: str | None = None
    """An ``s3a://`` store's S3 endpoint (SeaweedFS, MinIO, Ceph; path-style access); None: AWS."""
    s3_secret: str | None = None
    """The Secret (in the namespace) whose ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` the
    drivers and the History Server use for an ``s3a://`` store; None: the pods' own identity."""

    @property
    def s3a(self) -> bool:
        return self.log_dir.startswith("s3a://")

    def volume(self) -> Obj | None:
        if self.host_path:
            return {
                "name": VOLUME,
                "hostPath": {"path": self.host_path, "type": "DirectoryOrCreate"},
            }
        if self.claim:
            return {"name": VOLUME, "persistentVolumeClaim": {"claimName": self.claim}}
        return None


def to_configmap(namespace: str, store: EventLogStore) -> Obj:
    data = {
        "logDir": store.log_dir,
        "default": "true" if store.default else "false",
        "retentionSeconds": str(int(store.retention.total_seconds())),
    }
    if store.host_path:
        data["hostPath"] = store.host_path
    if store.claim:
        data["claimName"] = store.claim
    if store.s3_endpoint:
        data["s3Endpoint"] = store.s3_endpoint
    if store.s3_secret:
        data["s3Secret"] = store.s3_secret
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
        "data": data,
    }


def from_configmap(cm: Obj) -> EventLogStore:
    data = cm.get("data") or {}
    seconds = str(data.get("retentionSeconds", "")).strip()
    return EventLogStore(
        log_dir=data.get("logDir") or f"file:{MOUNT}",
        host_path=data.get("hostPath") or None,
        claim=data.get("claimName") or None,
        default=data.get("default") == "true",
        retention=timedelta(seconds=int(seconds)) if seconds.isdigit() else timedelta(days=7),
        s3_endpoint=data.get("s3Endpoint") or None,
        s3_secret=data.get("s3Secret") or None,
    )


def _where(store: EventLogStore) -> tuple[str, str] | None:
    """What identifies the storage behind ``store`` across namespaces: a node path or a remote
    URI (a PVC is per namespace; a ``file:`` directory without a volume is the pod's own)."""
    if store.host_path:
        return "hostPath", posixpath.normpath(store.host_path)
    if store.claim or store.log_dir.startswith(("file:", "/")):
        return None
    return "logDir", store.log_dir.rstrip("/")


def _overlap(a: tuple[str, str], b: tuple[str, str]) -> bool:
    if a[0] != b[0]:
        return False
    x, y = a[1].rstrip("/") + "/", b[1].rstrip("/") + "/"
    return x.startswith(y) or y.startswith(x)


def shared_stores(stores: Iterable[tuple[str, EventLogStore]]) -> list[tuple[str, list[str]]]:
    """The stores two or more namespaces share (the same or nested directories, the same
    remote URI) as (what, namespaces), each namespace's ``sparkplane-history`` given as
    ``(namespace, store)``."""
    located = sorted((w, ns) for ns, s in stores if (w := _where(s)) is not None)
    out: list[tuple[str, list[str]]] = []
    for where, ns in located:
        others = {n for w, n in located if n != ns and _overlap(w, where)}
        if others and not any(ns in names for _, names in out):
            out.append((f"{where[0]} {where[1]}", sorted({ns, *others})))
    return out


#: The keys of an ``s3a://`` store's Secret: the AWS SDK's own variables (S3A reads them).
S3_SECRET_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
#: Rolling event logs in object storage: an S3 object is visible only once closed, so a running
#: app's log shows up in the History Server file by file; 32 MiB files (Spark's default 128m)
#: bound what a long app has not yet shown, and compaction keeps the newest 20 files' worth.
S3A_ROLLING = {
    "spark.eventLog.rolling.enabled": "true",
    "spark.eventLog.rolling.maxFileSize": "32m",
}


def hadoop_s3a_conf(store: EventLogStore) -> dict[str, str]:
    """The Hadoop settings (without ``spark.hadoop.``) of an ``s3a://`` store with an endpoint."""
    if not (store.s3a and store.s3_endpoint):
        return {}
    return {"fs.s3a.endpoint": store.s3_endpoint, "fs.s3a.path.style.access": "true"}


def event_log_conf(store: EventLogStore) -> dict[str, str]:
    """The sparkConf for a driver writing its event log to ``store``."""
    conf = {ENABLED: "true", "spark.eventLog.dir": store.log_dir}
    if store.s3a:
        conf |= S3A_ROLLING
        conf |= {f"spark.hadoop.{k}": v for k, v in hadoop_s3a_conf(store).items()}
        if store.s3_secret:
            ref = "spark.kubernetes.driver.secretKeyRef"
            conf |= {f"{ref}.{key}": f"{store.s3_secret}:{key}" for key in S3_SECRET_KEYS}
    base = f"spark.kubernetes.driver.volumes.{{}}.{VOLUME}"
    if store.host_path:
        vol = base.format("hostPath")
        conf |= {f"{vol}.mount.path": MOUNT, f"{vol}.options.path": store.host_path}
        conf[f"{vol}.options.type"] = "DirectoryOrCreate"
    elif store.claim:
        vol = base.format("persistentVolumeClaim")
        conf |= {f"{vol}.mount.path": MOUNT, f"{vol}.options.claimName": store.claim}
    return conf


def with_event_log(conf: dict[str, str], store: EventLogStore | None) -> dict[str, str]:
    """``conf`` with event logging filled in when the app asks (or the namespace defaults to
    it); the app's own keys always win, ``spark.eventLog.enabled: "false"`` opts out."""
    asked = conf.get(ENABLED, "").strip().lower()
    if store is None or asked == "false" or (asked != "true" and not store.default):
        return conf
    return {**event_log_conf(store), **conf, ENABLED: "true"}


def server_objects(namespace: str, store: EventLogStore, image: str) -> list[Obj]:
    """The History Server (the Spark image's own) as a Deployment and its Service."""
    opts = [
        f"-Dspark.history.fs.logDirectory={store.log_dir}",
        "-Dspark.history.fs.update.interval=2s",
        "-Dspark.history.fs.cleaner.enabled=true",
        f"-Dspark.history.fs.cleaner.maxAge={int(store.retention.total_seconds())}s",
        "-Dspark.history.fs.cleaner.interval=10min",
        f"-Dspark.history.ui.port={PORT}",
        *(f"-Dspark.hadoop.{k}={v}" for k, v in hadoop_s3a_conf(store).items()),
    ]
    if store.s3a:  # compaction of rolling logs: the History Server reads at most 20 files
        opts.append("-Dspark.history.fs.eventLog.rolling.maxFilesToRetain=20")
    container: Obj = {
        "name": "history-server",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/opt/spark/bin/spark-class", "org.apache.spark.deploy.history.HistoryServer"],
        "env": [
            {"name": "SPARK_HISTORY_OPTS", "value": " ".join(opts)},
            {"name": "SPARK_DAEMON_MEMORY", "value": "512m"},
            {"name": "SPARK_NO_DAEMONIZE", "value": "true"},
        ],
        "ports": [{"name": "http", "containerPort": PORT}],
        "readinessProbe": {"httpGet": {"path": "/", "port": PORT}, "periodSeconds": 3},
        "resources": {"requests": {"cpu": "100m", "memory": "640Mi"}},
        "securityContext": {"runAsUser": 185, "runAsNonRoot": True},
    }
    pod: Obj = {"containers": [container]}
    if store.s3a:
        secret_env = _secret_env(store)
        container["env"] += secret_env
        pod["initContainers"] = [_s3a_mkdir(store, image, secret_env)]
    volume = store.volume()
    if volume:
        container["volumeMounts"] = [{"name": VOLUME, "mountPath": MOUNT}]
        pod["volumes"] = [volume]
        pod["initContainers"] = [  # drivers (uid 185) must be able to write there
            {
                "name": "permissions",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", f"chmod 1777 {MOUNT}"],
                "securityContext": {"runAsUser": 0},
                "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT}],
            }
        ]
    meta = {"name": NAME, "namespace": namespace, "labels": dict(LABELS)}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": pod},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "selector": {"app.kubernetes.io/name": NAME},
            "ports": [{"name": "http", "port": PORT, "targetPort": PORT}],
        },
    }
    return [deployment, service]


def _secret_env(store: EventLogStore) -> list[Obj]:
    if not store.s3_secret:
        return []
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": store.s3_secret, "key": key}}}
        for key in S3_SECRET_KEYS
    ]


def _s3a_mkdir(store: EventLogStore, image: str, env: list[Obj]) -> Obj:
    """An init-container creating the log directory (Spark requires it, S3 has no directories:
    S3A keeps an empty ``prefix/`` marker) with Hadoop's shell, the same jars and keys."""
    defines = [f"-D{k}={v}" for k, v in hadoop_s3a_conf(store).items()]
    return {
        "name": "log-dir",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [
            "sh",
            "-c",
            # Hadoop's shell insists on a core-site.xml (loud configuration): an empty one
            'mkdir -p /tmp/hadoop-conf && echo "<configuration/>" >/tmp/hadoop-conf/core-site.xml'
            ' && exec "$JAVA_HOME/bin/java" -Xmx128m -cp "/tmp/hadoop-conf:/opt/spark/jars/*" '
            'org.apache.hadoop.fs.FsShell "$@"',
            "mkdir",
            *defines,
            "-mkdir",
            "-p",
            store.log_dir,
        ],
        "env": env,
        "securityContext": {"runAsUser": 185, "runAsNonRoot": True},
    }


def app_path(app_id: str) -> str:
    """The History Server page of one app (its jobs)."""
    return f"/history/{app_id}/jobs/"
