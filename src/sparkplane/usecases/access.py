"""``rbac``: the least-privilege RBAC of an identity, rendered and (with a cluster) applied.

The rules and why each exists live in :mod:`sparkplane.security.rules`; the objects are built by
:func:`sparkplane.security.rbac.render`. Applying is server-side apply of each body, in order
(ServiceAccount, Roles, then their bindings), so a re-run updates what changed. Called by
:meth:`sparkplane.SparkPlane.rbac` (and through it by ``sparkplane rbac``); never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sparkplane.kube import Kube
from sparkplane.security.rbac import RbacObject, bodies, render
from sparkplane.security.rules import Identity
from sparkplane.vocab import describe


def rbac(
    kube: Kube | None,
    identity: Identity | str,
    namespace: str,
    *,
    service_account: str | None = None,
    target_namespaces: Sequence[str] = (),
    cluster_wide: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> list[RbacObject]:
    """The RBAC objects of ``identity`` in ``namespace``; applied when ``kube`` is given
    (``progress`` hears ``applied <Kind ns/name>`` for each). Each object keeps the reason of
    every rule (:func:`sparkplane.security.rbac.to_yaml` prints them as comments)."""
    objects = render(
        identity,
        namespace,
        service_account=service_account,
        namespaces=tuple(target_namespaces),
        cluster_wide=cluster_wide,
    )
    if kube is not None:
        for body in bodies(objects):
            kube.apply(body)
            progress(f"applied {describe(body)}")
    return objects
