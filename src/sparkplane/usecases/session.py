"""Spark Connect sessions: a Spark Connect server on the cluster, reached from Python.

A session is a native application whose driver runs Spark's own
``org.apache.spark.sql.connect.service.SparkConnectServer`` (gRPC on :data:`CONNECT_PORT`)
with its executors, submitted like any other (``usecases.create``), its driver pod labelled
``sparkplane.io/session=<name>`` so that any process can find it by name.

Authentication is Spark's own: Spark 4.0's server checks a pre-shared bearer token
(``spark.connect.authenticate.token``, read from ``SPARK_CONNECT_AUTHENTICATE_TOKEN``) on every
call, and a Spark Connect client sends it from ``sc://host:port/;token=...``. :func:`create`
makes a random token per session, puts it in a Secret owned by the driver pod (deleted with
it) that the driver reads through ``secretKeyRef`` (never in the spark.properties ConfigMap),
and keeps a copy for its creator in this machine's cache (mode 0600), which is how another
process of the same user re-attaches by name. The shipped client role may create Secrets but
never read them, so on the cluster only admins (identities allowed to read Secrets) can read
the token; the Secret and the driver pod record the identity that created the session.

The client reaches the server through a port-forward this module keeps open (no kubectl):
:class:`Attached` listens on ``localhost`` and forwards each connection to the driver's gRPC
port. From inside the cluster, the driver's headless Service answers on the same port.

Idle timeout and maximum lifetime: see :mod:`sparkplane.model.session` for the clock; ``gc``
(the clean-up CronJob, :mod:`sparkplane.usecases.gc`) ends sessions past either, so they end
when no client runs.

Operator mode: a Spark Connect server the operator runs is a session too (:func:`session_name`):
a Kubeflow SparkConnect's server (label ``sparkoperator.k8s.io/connect-name``), or the driver
of an Apache SparkApplication whose main class is Spark's Connect server, by the custom
resource's name. ``list``/``get``/``attach`` find them like native ones; they have no token
(Kubeflow's SparkConnect has no authentication: reach them through the port-forward or the
cluster network only) and no idle timeout; ``delete`` deletes their custom resource.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from pathlib import Path
from typing import Any

from sparkplane.errors import (
    AppNotFoundError,
    ForbiddenError,
    KubeError,
    Problem,
    SessionLimitError,
    SparkplaneError,
    TimeoutExpired,
    ValidationError,
)
from sparkplane.kube import Kube
from sparkplane.model import session as model
from sparkplane.model.apps import App
from sparkplane.model.progress import SparkProgress
from sparkplane.settings import Settings
from sparkplane.spec.connect import CONNECT_CLASS, CONNECT_PORT, CONNECT_PORT_CONF, connect_jar
from sparkplane.spec.kubeflow_connect import CONNECT_NAME_LABEL
from sparkplane.usecases import exposure
from sparkplane.version import SPARK_IMAGE, SPARK_VERSION
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    DRIVER_CONTAINER,
    DRIVER_SELECTOR,
    EXECUTOR_ROLE,
    IDLE_TIMEOUT_KEY,
    MAX_LIFETIME_KEY,
    ROLE_LABEL,
    SESSION_ENDPOINT_KEY,
    SESSION_LABEL,
    SESSION_OWNER_KEY,
    SESSION_QUOTA_KEY,
    SPARK_APPLICATION,
    SPARK_CONNECT,
    controller_of,
    is_dns1123_label,
)

Obj = dict[str, Any]
Progress = Callable[[str], None]

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
TOKEN_KEY = "token"
UI_PORT = 4040
DEFAULT_IDLE_TIMEOUT = 1800.0
DEFAULT_MAX_LIFETIME = 8 * 3600.0


class SessionError(SparkplaneError):
    """A session could not start, be found or be reached."""

    exit_code = 8


@dataclass(frozen=True)
class SessionOptions:
    """What a session runs with. ``conf``: any Spark properties (dynamic allocation, node
    placement through ``spark.kubernetes.node.selector.*``, packages...); ``idle_timeout`` and
    ``max_lifetime`` in seconds (0: none)."""

    name: str | None = None
    image: str = SPARK_IMAGE
    executors: int = 1
    driver_memory: str = "1g"
    executor_memory: str = "1g"
    driver_cores: str | None = None  # the pod's CPU request, e.g. "500m"
    executor_cores: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_lifetime: float = DEFAULT_MAX_LIFETIME
    service_account: str | None = None
    spark_version: str = SPARK_VERSION  # the image's: names the server's jar
    # reached from outside the cluster (:mod:`sparkplane.usecases.exposure`): "ingress"
    expose: str | None = None
    host: str | None = None
    tls_secret: str | None = None  # None: a Secret with a new CA's certificate
    ingress_class: str | None = None  # None: the cluster's default IngressClass
    ingress_port: int = 443  # where the ingress controller's TLS entry point listens

    def problems(self) -> list[Problem]:
        """Every bad option, naming the field and the fix."""
        found = []
        if self.name is not None and not is_dns1123_label(self.name):
            found.append(Problem("name", f"{self.name!r} is not a DNS label", "e.g. my-session"))
        if self.executors < 0:
            found.append(Problem("executors", "must be >= 0", "e.g. --executors 2"))
        for key in ("idle_timeout", "max_lifetime"):
            if getattr(self, key) < 0:
                found.append(Problem(key, "must be >= 0 seconds (0: none)", "e.g. 1800"))
        return found + exposure.problems(self.expose, self.host, self.ingress_port)


@dataclass(frozen=True)
class SessionInfo:
    """A session as seen on the cluster (``session get/list``)."""

    name: str
    namespace: str
    pod: str
    phase: str
    owner: str
    created: datetime
    idle: timedelta | None  # None: unknown (not serving yet, or the UI did not answer)
    idle_timeout: timedelta | None
    max_lifetime: timedelta | None
    executors: int
    ui: str  # how to open its Spark UI
    endpoint: str | None = None  # HOST:PORT through its Ingress (TLS), if exposed

    @property
    def age(self) -> timedelta:
        return datetime.now(UTC) - self.created


# -- creating -------------------------------------------------------------------------------
def whoami(kube: Kube) -> str:
    """The username the API server knows this client as (a SelfSubjectReview)."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        found = kube.create(review)
    except KubeError:
        return "unknown"
    return str(found.get("status", {}).get("userInfo", {}).get("username") or "unknown")


def session_argv(
    opts: SessionOptions, name: str, secret: str, owner: str, endpoint: str | None = None
) -> list[str]:
    """The spark-submit arguments of the session's Connect server."""
    conf: dict[str, str] = {
        "spark.kubernetes.container.image": opts.image,
        "spark.executor.instances": str(opts.executors),
        f"spark.kubernetes.driver.secretKeyRef.{TOKEN_ENV}": f"{secret}:{TOKEN_KEY}",
        f"spark.kubernetes.driver.label.{SESSION_LABEL}": name,
        f"spark.kubernetes.driver.annotation.{SESSION_OWNER_KEY}": owner,
        f"spark.kubernetes.driver.annotation.{IDLE_TIMEOUT_KEY}": str(int(opts.idle_timeout)),
        f"spark.kubernetes.driver.annotation.{MAX_LIFETIME_KEY}": str(int(opts.max_lifetime)),
        CONNECT_PORT_CONF: str(CONNECT_PORT),
    }
    if endpoint:
        conf[f"spark.kubernetes.driver.annotation.{SESSION_ENDPOINT_KEY}"] = endpoint
    if opts.driver_cores:
        conf["spark.kubernetes.driver.request.cores"] = opts.driver_cores
    if opts.executor_cores:
        conf["spark.kubernetes.executor.request.cores"] = opts.executor_cores
    if opts.service_account:
        conf["spark.kubernetes.authenticate.driver.serviceAccountName"] = opts.service_account
    conf.update({k: v for k, v in opts.conf.items() if v is not None})
    argv = ["--name", name, "--class", CONNECT_CLASS]
    argv += ["--driver-memory", opts.driver_memory, "--executor-memory", opts.executor_memory]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return [*argv, connect_jar(opts.spark_version)]


def token_secret(name: str, namespace: str, token: str, owner: str) -> Obj:
    """The Secret holding a session's token (owned by its driver pod once created)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{name}-connect-token",
            "namespace": namespace,
            "labels": {SESSION_LABEL: name},
            "annotations": {SESSION_OWNER_KEY: owner},
        },
        "type": "Opaque",
        "stringData": {TOKEN_KEY: token},
    }


def create(kube: Kube, opts: SessionOptions, namespace: str, *, settings: Settings) -> SessionInfo:
    """Start a session's server (nothing is created when an option is wrong, or when a
    session of that name is running); the token is kept for this user (:func:`saved_token`)."""
    from sparkplane.usecases.create import SubmitOptions, render_native, submit_objects
    from sparkplane.usecases.sources import read_source

    problems = opts.problems()
    if problems:
        raise ValidationError(problems, subject="session options")
    name = opts.name or f"session-{secrets.token_hex(3)}"
    if _driver(kube, name, namespace) is not None:
        raise ValidationError(
            [Problem("name", f"session {name} already runs in {namespace}", "attach to it")],
            subject="session options",
        )
    exposed = _exposure(kube, opts, namespace)
    check_limit(kube, namespace)
    owner = whoami(kube)
    token = secrets.token_urlsafe(32)
    secret = token_secret(name, namespace, token, owner)
    extra, ca = exposure.objects(name, namespace, exposed, owner) if exposed else ([], "")
    endpoint = exposed.endpoint if exposed else None
    argv = session_argv(opts, name, secret["metadata"]["name"], owner, endpoint)
    source = read_source(argv=argv, namespace=namespace)
    assert source.app is not None  # argv is always a spec
    sub = SubmitOptions()
    rendered = render_native(source.app, kube.api.configuration.host, sub)
    _save_token(settings, kube, namespace, name, token)
    _ca_path(settings, kube, namespace, name).unlink(missing_ok=True)
    if ca:
        _save_ca(settings, kube, namespace, name, ca)
    try:
        submitted = submit_objects(
            kube,
            rendered.driver_pod,
            [*rendered.resources, secret, *extra],
            rendered.pre_resources,
            sub,
            app_id=rendered.app_id,
        )
    except BaseException:  # nothing was made (rolled back): no token to keep either
        _token_path(settings, kube, namespace, name).unlink(missing_ok=True)
        _ca_path(settings, kube, namespace, name).unlink(missing_ok=True)
        raise
    assert submitted.driver_pod is not None
    pod = kube.get("v1", "Pod", submitted.driver_pod, namespace)
    return info(kube, pod, idle=False)


def _exposure(kube: Kube, opts: SessionOptions, namespace: str) -> exposure.Exposure | None:
    """The session's exposure checked against the cluster (None: not exposed)."""
    if opts.expose is None or opts.host is None:
        return None
    return exposure.resolve(
        kube,
        namespace,
        host=opts.host,
        port=opts.ingress_port,
        ingress_class=opts.ingress_class,
        tls_secret=opts.tls_secret,
    )


# -- the namespace's cap ---------------------------------------------------------------------
def namespace_limit(kube: Kube, namespace: str) -> model.SessionLimit | None:
    """The namespace's cap on concurrent sessions (None: none, or its quotas are not readable
    by this identity — then ``gc`` alone enforces it)."""
    try:
        return model.session_limit(kube.list("v1", "ResourceQuota", namespace))
    except ForbiddenError:
        return None


def check_limit(kube: Kube, namespace: str) -> None:
    """Refuse a new session when ``namespace`` already runs as many as its cap allows."""
    cap = namespace_limit(kube, namespace)
    if cap is None:
        return
    # every session's server counts: native ones and the operator's (SparkConnect, Apache)
    running = sorted({str(session_name(p)) for p in _sessions(kube, namespace) if model.live(p)})
    if len(running) >= cap.sessions:
        raise SessionLimitError(
            f"namespace {namespace} already runs {len(running)} of its {cap.sessions} Spark "
            f"Connect sessions (ResourceQuota {cap.quota}, {SESSION_QUOTA_KEY}): "
            f"{', '.join(running)}. Attach to one (`sparkplane session attach NAME`) or end "
            "one (`sparkplane session delete NAME`)",
            code=403,
            reason="Forbidden",
        )


def over_limit(kube: Kube, drivers: list[Obj], ending: set[tuple[str, str]]) -> dict[Any, str]:
    """For ``gc``: the session drivers beyond their namespace's cap, newest first, with the
    reason (keys ``(namespace, pod)``; those already ``ending`` do not count)."""
    out: dict[Any, str] = {}
    namespaces = {
        p["metadata"]["namespace"]
        for p in drivers
        if SESSION_LABEL in (p["metadata"].get("labels") or {})
    }
    for namespace in sorted(namespaces):
        try:
            cap = model.session_limit(kube.list("v1", "ResourceQuota", namespace))
        except KubeError:  # not readable: never delete on a guess
            continue
        if cap is None:
            continue
        counted = [
            p
            for p in drivers
            if p["metadata"]["namespace"] == namespace
            and (namespace, p["metadata"]["name"]) not in ending
        ]
        for pod in model.beyond_limit(counted, cap):
            out[(namespace, pod["metadata"]["name"])] = (
                f"session beyond its namespace's cap of {cap.sessions} (ResourceQuota {cap.quota})"
            )
    return out


# -- finding --------------------------------------------------------------------------------
def _serves_connect(pod: Obj) -> bool:
    containers = (pod.get("spec") or {}).get("containers") or []
    return any(CONNECT_CLASS in (c.get("args") or []) for c in containers)


def session_name(pod: Obj) -> str | None:
    """The session driver ``pod`` serves, or None: a native session's (its label), a Kubeflow
    SparkConnect's (its ``connect-name`` label), or that of the Apache SparkApplication whose
    driver runs Spark's Connect server (the application's name)."""
    labels = pod.get("metadata", {}).get("labels") or {}
    for key in (SESSION_LABEL, CONNECT_NAME_LABEL):
        if labels.get(key):
            return str(labels[key])
    owner = controller_of(pod)
    if owner is not None and owner.get("kind") == SPARK_APPLICATION and _serves_connect(pod):
        return str(owner.get("name"))
    return None


def _sessions(kube: Kube, namespace: str | None, name: str | None = None) -> list[Obj]:
    """Live session drivers (of session ``name``), newest first (an operator's restarted
    server leaves its earlier attempts' pods)."""
    pods = kube.list("v1", "Pod", namespace, label_selector=DRIVER_SELECTOR)
    found = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and (served := session_name(p)) is not None
        and (name is None or served == name)
    ]
    return sorted(found, key=model.created_at, reverse=True)


def _driver(kube: Kube, name: str, namespace: str) -> Obj | None:
    live = _sessions(kube, namespace, name)
    return live[0] if live else None


def driver(kube: Kube, name: str, namespace: str) -> Obj:
    """The driver pod of session ``name``; AppNotFoundError when there is none."""
    pod = _driver(kube, name, namespace)
    if pod is None:
        raise AppNotFoundError(f"no session {name} in namespace {namespace}")
    return pod


def app_of(kube: Kube, name: str, namespace: str, *, settings: Settings) -> str:
    """The app (``sparkplane logs`` name) of session ``name``: its live driver's, else its
    newest archived run's; AppNotFoundError when there is neither."""
    from sparkplane.history.logs import archived_session

    pod = _driver(kube, name, namespace)
    if pod is not None:
        return str(pod["metadata"]["name"]).removesuffix("-driver")
    ended = archived_session(namespace, name, settings=settings, kube=kube)
    if ended is None:
        raise AppNotFoundError(f"no session {name} in namespace {namespace}, running or archived")
    return ended.app


def info(kube: Kube, pod: Obj, *, idle: bool = True) -> SessionInfo:
    """What ``session get`` shows of the session of driver ``pod`` (``idle``: ask the
    driver's REST API how long it has been idle)."""
    meta = pod["metadata"]
    namespace = meta["namespace"]
    app_id = meta["labels"].get(APP_SELECTOR_LABEL, "")
    selector = f"{ROLE_LABEL}={EXECUTOR_ROLE},{APP_SELECTOR_LABEL}={app_id}"
    executors = kube.list("v1", "Pod", namespace, label_selector=selector)
    running = [e for e in executors if e.get("status", {}).get("phase") == "Running"]
    name = session_name(pod) or meta["name"]
    native = SESSION_LABEL in meta["labels"]
    ui = f"sparkplane ui {meta['name'].removesuffix('-driver')} -n {namespace}"
    return SessionInfo(
        name=name,
        namespace=namespace,
        pod=meta["name"],
        phase=pod.get("status", {}).get("phase", "Pending"),
        owner=(meta.get("annotations") or {}).get(SESSION_OWNER_KEY, "unknown"),
        created=model.created_at(pod),
        idle=idle_for(kube, pod, datetime.now(UTC)) if idle else None,
        idle_timeout=model.limit(pod, IDLE_TIMEOUT_KEY),
        max_lifetime=model.limit(pod, MAX_LIFETIME_KEY),
        executors=len(running),
        ui=ui if native else f"sparkplane session ui {name} -n {namespace}",
        endpoint=(meta.get("annotations") or {}).get(SESSION_ENDPOINT_KEY),
    )


def list_sessions(kube: Kube, namespace: str | None) -> list[SessionInfo]:
    """Every live session (all namespaces with ``None``), an operator's by its newest server."""
    newest: dict[tuple[str, str | None], Obj] = {}
    for pod in _sessions(kube, namespace):
        newest.setdefault((pod["metadata"]["namespace"], session_name(pod)), pod)
    return [info(kube, p) for p in newest.values()]


def idle_for(kube: Kube, pod: Obj, now: datetime) -> timedelta | None:
    """How long the session of ``pod`` has been idle (see :mod:`sparkplane.model.session`),
    from its driver's REST API through a port-forward; None when the driver does not answer."""
    if pod.get("status", {}).get("phase") != "Running":
        return None
    meta = pod["metadata"]

    def rest(path: str) -> Any:
        return _rest(kube, meta["name"], meta["namespace"], path)

    try:
        apps = rest("/api/v1/applications")
        app_id = apps[0]["id"]
        jobs = rest(f"/api/v1/applications/{app_id}/jobs")
        sql = rest(f"/api/v1/applications/{app_id}/sql?details=false")
    except (OSError, KubeError, ValueError, LookupError, TypeError):
        return None
    started = model.spark_time(apps[0].get("attempts", [{}])[0].get("startTime"))
    return now - model.last_activity(started or model.created_at(pod), jobs, sql, now)


def session_expiry(kube: Kube, pod: Obj, now: datetime) -> str | None:
    """Why the session of a running driver ``pod`` is to end (idle or too old), or None (not
    a session, not running, within its limits, or its idle time unknown)."""
    meta = pod.get("metadata", {})
    if SESSION_LABEL not in (meta.get("labels") or {}):
        return None
    if pod.get("status", {}).get("phase") not in ("Pending", "Running"):
        return None
    idle = idle_for(kube, pod, now) if model.limit(pod, IDLE_TIMEOUT_KEY) else None
    found = model.expiry(pod, now, idle)
    return found.reason if found.expired else None


# -- waiting and reaching -------------------------------------------------------------------
def wait_running(
    kube: Kube, name: str, namespace: str, *, timeout: float, progress: Progress
) -> Obj:
    """The driver pod once its container runs; SessionError (with the log's tail) if it
    ended, TimeoutExpired after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    said = ""
    while True:
        pod = driver(kube, name, namespace)
        phase = pod.get("status", {}).get("phase", "Pending")
        waiting = _waiting_reason(pod)
        state = f"driver {pod['metadata']['name']}: {phase}{f' ({waiting})' if waiting else ''}"
        if state != said:
            progress(state)
            said = state
        if phase == "Running":
            return pod
        if phase in ("Succeeded", "Failed"):
            tail = "\n".join(kube.logs(pod["metadata"]["name"], namespace, tail_lines=20))
            raise SessionError(f"session {name}'s server ended ({phase}):\n{tail}")
        if time.monotonic() > deadline:
            raise TimeoutExpired(f"session {name} not running after {timeout:.0f}s ({state})")
        time.sleep(1.0)


def _waiting_reason(pod: Obj) -> str:
    for status in pod.get("status", {}).get("containerStatuses") or []:
        if status.get("name") == DRIVER_CONTAINER:
            return str((status.get("state", {}).get("waiting") or {}).get("reason") or "")
    return ""


_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_H2_SETTINGS = 4  # the frame type a server's first frame has


def serves_http2(kube: Kube, pod: str, namespace: str, port: int) -> bool:
    """Whether an HTTP/2 (gRPC) server answers on ``port`` of ``pod`` (one attempt)."""
    from sparkplane.kube.portforward import open_stream

    try:
        sock = open_stream(kube, pod, namespace, port)
    except Exception:
        return False
    try:
        sock.settimeout(5)
        sock.sendall(_H2_PREFACE + bytes([0, 0, 0, _H2_SETTINGS, 0, 0, 0, 0, 0]))
        head = sock.recv(9)
    except OSError:
        return False
    finally:
        sock.close()
    return len(head) == 9 and head[3] == _H2_SETTINGS


class Forward:
    """A port-forward from ``localhost`` (any free port, :attr:`port`) to ``port`` of a pod,
    served by a daemon thread until :meth:`close`."""

    def __init__(self, kube: Kube, pod: str, namespace: str, port: int) -> None:
        from sparkplane.kube.portforward import forward, listen

        self._stop = threading.Event()
        server = listen(0)
        self.port: int = server.getsockname()[1]
        self._thread = threading.Thread(
            target=forward,
            args=(kube, pod, namespace, port, server),
            kwargs={"stop": self._stop},
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _rest(kube: Kube, pod: str, namespace: str, path: str) -> Any:
    """A JSON answer of the driver's REST API (the UI port), through a port-forward stream."""
    from sparkplane.kube.portforward import http_get

    return json.loads(http_get(kube, pod, namespace, UI_PORT, path))


def progress(kube: Kube, pod: str, namespace: str, *, url: str | None = None) -> SparkProgress:
    """The jobs and stages of the Spark application of driver ``pod`` (its REST API's
    ``/jobs`` and ``/stages``); SessionError when the driver does not answer."""
    try:
        app_id = _rest(kube, pod, namespace, "/api/v1/applications")[0]["id"]
        base = f"/api/v1/applications/{app_id}"
        jobs = _rest(kube, pod, namespace, f"{base}/jobs")
        stages = _rest(kube, pod, namespace, f"{base}/stages")
    except (OSError, KubeError, ValueError, LookupError, TypeError) as exc:
        raise SessionError(
            f"the Spark UI of {namespace}/{pod} does not answer ({exc}); is the session "
            "running? (sparkplane session get)"
        ) from exc
    return SparkProgress.from_rest(str(app_id), jobs, stages, url)


class Attached:
    """A session reached through a port-forward on ``localhost`` that this object keeps open
    until :meth:`close`: :meth:`spark` is a Spark Connect SparkSession on it, :meth:`ui` its
    Spark UI and progress, :meth:`logs` its driver's log. Its ``repr`` is short (name,
    namespace, state, age, endpoint) and never shows the token."""

    def __init__(
        self,
        kube: Kube,
        pod: str,
        namespace: str,
        name: str,
        token: str | None,
        *,
        settings: Settings,
        created: datetime | None = None,
        endpoint: str | None = None,
        ca_file: Path | None = None,
    ):
        self._kube = kube
        self.endpoint = endpoint  # HOST:PORT through its Ingress (TLS), if exposed
        self.ca_file = ca_file  # the CA certificate its Ingress's TLS is signed by, if made
        self.name = name
        self.namespace = namespace
        self.pod = pod
        self.app = pod.removesuffix("-driver")  # the app name `sparkplane logs/ui` take
        self.created = created or datetime.now(UTC)
        self._token = token
        self._settings = settings
        self._grpc = Forward(kube, pod, namespace, CONNECT_PORT)
        self.port: int = self._grpc.port
        self._ui: Forward | None = None
        self._spark: Any = None
        self.closed = False

    def url(self, *, token: bool = True) -> str:
        """The Spark Connect URL (``sc://localhost:PORT/;token=...``; the client sends the
        token only to ``localhost`` without TLS, so the host is ``localhost``)."""
        base = f"sc://localhost:{self.port}"
        return f"{base}/;token={self._token}" if token and self._token else base

    def external_url(self, *, token: bool = True) -> str | None:
        """The ``sc://HOST:PORT/;use_ssl=true;token=...`` URL through the session's Ingress
        (None: not exposed); trust :attr:`ca_file` when sparkplane made its certificate."""
        if self.endpoint is None:
            return None
        return exposure.url(self.endpoint, self._token if token else None)

    def wait_serving(self, *, timeout: float, progress: Progress) -> None:
        """Until the server answers on its gRPC port: through a forward stream, the HTTP/2
        connection preface must get the server's SETTINGS frame back (what any gRPC server
        sends first; a port nobody listens on resets the stream)."""
        progress(f"waiting for Spark Connect on port {CONNECT_PORT}")
        deadline = time.monotonic() + timeout
        while not serves_http2(self._kube, self.pod, self.namespace, CONNECT_PORT):
            if time.monotonic() > deadline:
                raise TimeoutExpired(
                    f"session {self.name}: no Spark Connect server on port {CONNECT_PORT} "
                    f"after {timeout:.0f}s (see `sparkplane logs {self.app}`)"
                )
            time.sleep(1.0)
        progress("serving")

    def spark(self) -> Any:
        """A pyspark Connect SparkSession on this session's server (made once)."""
        if self._spark is None:
            from pyspark.sql.connect.session import SparkSession

            self._spark = SparkSession.builder.remote(self.url()).create()
        return self._spark

    def ui(self) -> SparkProgress:
        """The session's Spark UI: ``url`` on this machine through a port-forward this object
        opens on first use (closed with it), and the jobs and stages from the driver's REST
        API, as data (Jupyter shows a table with the link)."""
        if self._ui is None:
            self._ui = Forward(self._kube, self.pod, self.namespace, UI_PORT)
        url = f"http://127.0.0.1:{self._ui.port}"  # where the forward listens
        return progress(self._kube, self.pod, self.namespace, url=url)

    def logs(self, *, tail: int | None = None, follow: bool = False) -> Iterator[str]:
        """The driver's log lines (``follow``: until it ends); once the session has ended, from
        the log archive (``sparkplane logs`` exactly)."""
        from sparkplane.usecases.logs import app_logs

        return app_logs(
            self._kube, self.app, self.namespace, settings=self._settings, tail=tail, follow=follow
        )

    def state(self) -> str:
        """The driver pod's phase now (``Ended`` once it is gone)."""
        try:
            pod = self._kube.get_or_none("v1", "Pod", self.pod, self.namespace)
        except KubeError:
            return "unknown"
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return "Ended"
        return str(pod.get("status", {}).get("phase", "Pending"))

    def close(self) -> None:
        """Release the client's server-side session (unless the server is gone: pyspark's
        client would retry that call for minutes) and stop the port-forwards."""
        if self._spark is not None and self.state() != "Ended":
            try:
                self._spark.stop()
            except Exception:  # the server may be ending
                pass
        self._spark = None
        for forward in (self._grpc, self._ui):
            if forward is not None:
                forward.close()
        self.closed = True

    def __enter__(self) -> Attached:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.state()
        age = model.short(datetime.now(UTC) - self.created)
        return (
            f"<session {self.name} namespace={self.namespace} state={state} age={age} "
            f"endpoint={self.url(token=False)}>"
        )


def attach(
    kube: Kube,
    name: str,
    namespace: str,
    *,
    settings: Settings,
    token: str | None = None,
    timeout: float = 300.0,
    progress: Progress = lambda _: None,
) -> Attached:
    """Reach session ``name`` once it serves: a port-forward and its token (given, else this
    user's saved copy, else read from its Secret where this identity may)."""
    pod = wait_running(kube, name, namespace, timeout=timeout, progress=progress)
    token = token or saved_token(settings, kube, namespace, name) or _secret_token(kube, pod)
    if token is None and SESSION_LABEL in pod["metadata"]["labels"]:  # operator's: no token
        raise SessionError(
            f"no token for session {name}: it was created by "
            f"{(pod['metadata'].get('annotations') or {}).get(SESSION_OWNER_KEY, 'someone else')} "
            "on another machine; ask them (or an admin) for it and pass --token"
        )
    attached = Attached(
        kube,
        pod["metadata"]["name"],
        namespace,
        name,
        token,
        settings=settings,
        created=model.created_at(pod),
        endpoint=(pod["metadata"].get("annotations") or {}).get(SESSION_ENDPOINT_KEY),
        ca_file=saved_ca(settings, kube, namespace, name),
    )
    try:
        attached.wait_serving(timeout=timeout, progress=progress)
    except BaseException:
        attached.close()
        raise
    return attached


def delete(kube: Kube, name: str, namespace: str, *, settings: Settings, wait: bool) -> None:
    """End session ``name``: its driver (logs archived first) and everything it owns."""
    from sparkplane.usecases.kill import kill
    from sparkplane.usecases.query import get_app

    pod = driver(kube, name, namespace)
    owner = controller_of(pod)
    if SESSION_LABEL not in pod["metadata"]["labels"] and owner is not None:
        if owner.get("kind") not in (SPARK_APPLICATION, SPARK_CONNECT):
            raise SessionError(f"session {name} is run by a {owner.get('kind')}: delete that")
        ref = (str(owner["apiVersion"]), str(owner["kind"]), str(owner["name"]))
        kube.delete(*ref, namespace, uid=str(owner["uid"]))
        if wait:
            _wait_gone(kube, pod, timeout=300.0)
        return
    app: App = get_app(kube, pod["metadata"]["name"], namespace)
    kill(kube, app, wait=wait, settings=settings)
    _token_path(settings, kube, namespace, name).unlink(missing_ok=True)
    _ca_path(settings, kube, namespace, name).unlink(missing_ok=True)


def _wait_gone(kube: Kube, pod: Obj, *, timeout: float) -> None:
    """Until the garbage collector has removed ``pod`` (its custom resource deleted)."""
    meta = pod["metadata"]
    deadline = time.monotonic() + timeout
    while kube.get_or_none("v1", "Pod", meta["name"], meta["namespace"]) is not None:
        if time.monotonic() > deadline:
            raise TimeoutExpired(f"pod {meta['name']} still there after {timeout:.0f}s")
        time.sleep(1.0)


# -- the creator's copy of the token --------------------------------------------------------
def _token_path(settings: Settings, kube: Kube, namespace: str, name: str) -> Path:
    cluster = sha256(str(kube.api.configuration.host).encode()).hexdigest()[:12]
    return settings.cache_dir / "sessions" / cluster / namespace / f"{name}.token"


def _save_token(settings: Settings, kube: Kube, namespace: str, name: str, token: str) -> None:
    path = _token_path(settings, kube, namespace, name)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token)


def _ca_path(settings: Settings, kube: Kube, namespace: str, name: str) -> Path:
    return _token_path(settings, kube, namespace, name).with_suffix(".ca.crt")


def _save_ca(settings: Settings, kube: Kube, namespace: str, name: str, pem: str) -> None:
    path = _ca_path(settings, kube, namespace, name)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(pem)


def saved_ca(settings: Settings, kube: Kube, namespace: str, name: str) -> Path | None:
    """The CA certificate of the session's Ingress TLS, if this machine created it."""
    path = _ca_path(settings, kube, namespace, name)
    return path if path.exists() else None


def saved_token(settings: Settings, kube: Kube, namespace: str, name: str) -> str | None:
    """This user's copy of a session's token, if this machine created it."""
    path = _token_path(settings, kube, namespace, name)
    return path.read_text().strip() if path.exists() else None


def _secret_token(kube: Kube, pod: Obj) -> str | None:
    """The token from the session's Secret, for identities that may read Secrets (admins)."""
    import base64

    meta = pod["metadata"]
    try:
        found = kube.get(
            "v1", "Secret", f"{meta['labels'][SESSION_LABEL]}-connect-token", meta["namespace"]
        )
    except KubeError:
        return None
    data = (found.get("data") or {}).get(TOKEN_KEY)
    return base64.b64decode(data).decode() if data else None
