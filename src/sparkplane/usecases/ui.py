"""The Spark UI address of an application: from its Ingress once the load balancer has given it
an address (the seed article's wait loop), else from its UI Service for a port-forward
(:func:`forward_ui`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkplane.kube import Kube
from sparkplane.model.apps import App

Obj = dict[str, Any]
UI_PORT = 4040


@dataclass(frozen=True)
class UiAddress:
    """Where the UI is: an URL through an Ingress, or a pod and port (and the page ``path``
    on it) to forward to. ``via``: ``ingress``, ``port-forward`` (the live driver) or
    ``history`` (a finished app's page in its namespace's History Server)."""

    url: str | None
    pod: str | None = None
    port: int = UI_PORT
    via: str = "ingress"
    path: str = ""


def ingress_url(ingress: Obj) -> str | None:
    """``http(s)://host/path`` of an Ingress whose load balancer address is known, else None."""
    lb = (ingress.get("status") or {}).get("loadBalancer", {}).get("ingress") or []
    if not lb:
        return None
    address = lb[0].get("hostname") or lb[0].get("ip")
    spec = ingress.get("spec") or {}
    rule = (spec.get("rules") or [{}])[0]
    host = rule.get("host") or address
    paths = (rule.get("http") or {}).get("paths") or [{}]
    path = paths[0].get("path") or "/"
    scheme = "https" if spec.get("tls") else "http"
    return f"{scheme}://{host}{path}"


def ui_address(kube: Kube, app: App, *, wait: float = 0.0, interval: float = 1.0) -> UiAddress:
    """The UI address; waits up to ``wait`` seconds for an Ingress address to appear."""
    deadline = time.monotonic() + wait
    while True:
        ingresses = (
            kube.list(
                "networking.k8s.io/v1",
                "Ingress",
                app.namespace,
                label_selector=f"spark-app-selector={app.app_id}",
            )
            if app.app_id
            else []
        )
        for ingress in ingresses:
            url = ingress_url(ingress)
            if url:
                return UiAddress(url=url)
        if not ingresses or time.monotonic() >= deadline:
            return UiAddress(url=None, pod=app.driver_pod, port=UI_PORT, via="port-forward")
        time.sleep(interval)


def forward_ui(
    kube: Kube,
    address: UiAddress,
    namespace: str,
    *,
    local_port: int = UI_PORT,
    on_ready: Callable[[str], None] = lambda _: None,
) -> None:
    """Forward ``local_port`` (0: any free port) to the address's pod and port (the driver's
    UI, or the History Server) until interrupted; ``on_ready`` gets the local URL (with the
    address's page path) once listening. A taken port raises
    :class:`~sparkplane.errors.LocalPortError` before anything is printed."""
    from sparkplane.errors import AppNotFoundError
    from sparkplane.kube.portforward import forward, listen

    if not address.pod:
        raise AppNotFoundError("no pod to port-forward to")
    server = listen(local_port)  # a taken port fails here: LocalPortError, nothing printed
    thread = threading.Thread(
        target=forward, args=(kube, address.pod, namespace, address.port, server), daemon=True
    )
    thread.start()
    on_ready(f"http://127.0.0.1:{server.getsockname()[1]}{address.path}")
    while thread.is_alive():
        thread.join(1)
