"""Driver and executor logs, streamed: the caller reads lines as they come (or stops early)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from urllib3.exceptions import ProtocolError

from sparkplane.errors import AppNotFoundError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.model.apps import App
from sparkplane.settings import Settings
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    DRIVER_CONTAINER,
    EXECUTOR_CONTAINER,
    EXECUTOR_SELECTOR,
    POD_ENDED,
)

POLL_SECONDS = 1.0
FLUSH_SECONDS = 1.0


def log_target(kube: Kube, app: App, executor: int | None) -> tuple[str, str | None]:
    """The pod (and container) whose log to read; says plainly when the pod is gone."""
    ns = app.namespace
    if executor is None:
        if not app.driver_pod:
            raise AppNotFoundError(f"{app.name} has no driver pod yet ({app.state})")
        pod = kube.get_or_none("v1", "Pod", app.driver_pod, ns)
        if pod is None:
            raise AppNotFoundError(
                f"the driver pod {ns}/{app.driver_pod} of {app.name} is gone (deleted or "
                "garbage-collected), and its logs went with it; Kubernetes keeps no logs of "
                "deleted pods"
            )
        return app.driver_pod, _container(pod, DRIVER_CONTAINER)
    if not app.app_id:
        raise AppNotFoundError(f"{app.name} has no application id yet: no executors")
    selector = f"{EXECUTOR_SELECTOR},{APP_SELECTOR_LABEL}={app.app_id},spark-exec-id={executor}"
    pods = kube.list("v1", "Pod", ns, label_selector=selector)
    if not pods:
        raise AppNotFoundError(
            f"executor {executor} of {app.name} does not exist (anymore): executors are "
            "deleted when the application ends"
        )
    return pods[0]["metadata"]["name"], _container(pods[0], EXECUTOR_CONTAINER)


def _container(pod: dict[str, object], preferred: str) -> str | None:
    spec = pod.get("spec")
    containers = spec.get("containers", []) if isinstance(spec, dict) else []
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if preferred in names:
        return preferred
    return str(names[0]) if names else None


def stream_logs(
    kube: Kube,
    app: App,
    *,
    executor: int | None = None,
    follow: bool = False,
    since_seconds: int | None = None,
    tail_lines: int | None = None,
) -> Iterator[str]:
    """Yield log lines of the driver (or executor ``executor``)."""
    pod, container = log_target(kube, app, executor)
    current = kube.get_or_none("v1", "Pod", pod, app.namespace)
    if current is None or current.get("status", {}).get("phase") in POD_ENDED:
        follow = False  # nothing more will be written
    stop = threading.Event()
    responses: list[Any] = []
    if follow:
        threading.Thread(
            target=_close_when_finished,
            args=(kube, app.namespace, pod, responses, stop),
            daemon=True,
            name=f"logs-end-{pod}",
        ).start()
    try:
        yield from kube.logs(
            pod,
            app.namespace,
            container=container,
            follow=follow,
            since_seconds=since_seconds,
            tail_lines=tail_lines,
            on_open=responses.append,
        )
    except NotFoundError as exc:
        raise AppNotFoundError(
            f"pod {app.namespace}/{pod} disappeared while reading its log"
        ) from exc
    except (OSError, ProtocolError):
        if not stop.is_set():
            raise
    finally:
        stop.set()


def _close_when_finished(
    kube: Kube, namespace: str, pod: str, responses: list[Any], stop: threading.Event
) -> None:
    """End a follow once the pod has finished or is gone (not every kubelet closes it)."""
    while not stop.is_set():
        current = kube.get_or_none("v1", "Pod", pod, namespace)
        if current is None or current.get("status", {}).get("phase") in POD_ENDED:
            time.sleep(FLUSH_SECONDS)  # let the last lines through
            stop.set()
            for resp in responses:
                with contextlib.suppress(Exception):
                    resp.shutdown()
            return
        stop.wait(POLL_SECONDS)


def app_logs(
    kube: Kube,
    name: str,
    namespace: str,
    *,
    settings: Settings,
    app: App | None = None,
    executor: int | None = None,
    follow: bool = False,
    since_seconds: int | None = None,
    tail: int | None = None,
    notice: Callable[[str], None] = lambda _: None,
) -> Iterator[str]:
    """Log lines of app ``name``'s driver (or executor N) while its pod exists, else from the
    log archive (``notice`` says so): what ``sparkplane logs`` and ``session.logs()`` read.
    ``app``: the app as already found (else it is looked up by name)."""
    from sparkplane.history.logs import live_or_archived
    from sparkplane.usecases.query import get_app

    missing: AppNotFoundError | None = None
    if app is None:
        try:
            app = get_app(kube, name, namespace)
        except AppNotFoundError as exc:  # gone: the archive may have its logs
            missing = exc
    found = app

    def live() -> Iterator[str]:
        assert found is not None
        return stream_logs(
            kube,
            found,
            executor=executor,
            follow=follow,
            since_seconds=since_seconds,
            tail_lines=tail,
        )

    return live_or_archived(
        None if missing else live,
        namespace,
        name,
        executor,
        tail=tail,
        notice=notice,
        missing=missing,
        settings=settings,
        kube=kube,
    )
