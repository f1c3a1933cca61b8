"""Suspend and resume an application (``sparkplane suspend|resume APP``).

An operator-mode application (Apache's ``spark.apache.org`` SparkApplication, or Kubeflow's
v1beta2 one) is suspended by setting ``spec.suspend: true`` (the field Apache's operator 1.1.0
added, and Kubeflow v2.4's): the operator then releases the driver and executors (their logs
archived first) and holds the app ``Suspended``; clearing it (``false``) resumes the app with a
new attempt. Only the custom resource is read and patched, so a role that may only edit
SparkApplications suffices.

A native submission cannot be held: nothing keeps its spec to start it again (the driver pod
is the whole application), so both verbs refuse it (:class:`NotSuspendableError`, exit 12)
naming ``sparkplane kill`` and operator mode instead; so are finished applications.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkplane.errors import AppNotFoundError, KubeError, NotFoundError, NotSuspendableError
from sparkplane.kube import Kube
from sparkplane.model.apps import KINDS, Mode
from sparkplane.model.assemble import Index, cr_app
from sparkplane.model.phase import is_finished


@dataclass(frozen=True)
class Suspension:
    """What ``suspend``/``resume`` did: ``suspend`` is the value ``spec.suspend`` now has;
    ``state`` the app's state when it was set (the operator acts on it next)."""

    name: str
    namespace: str
    mode: Mode
    suspend: bool
    state: str


def set_suspend(kube: Kube, name: str, namespace: str, suspend: bool) -> Suspension:
    """Set ``spec.suspend`` of the operator-mode app ``name`` (see the module doc)."""
    denied: KubeError | None = None
    for mode, kind in KINDS.items():
        if mode is Mode.NATIVE:
            continue
        try:
            cr = kube.get(kind.api_version, kind.kind, name, namespace)
        except NotFoundError:
            continue
        except KubeError as exc:  # a kind not served, or not this identity's to read
            denied = denied or (exc if exc.code == 403 else None)
            continue
        app = cr_app(cr, Index([]))
        state = app.state.raw_state or str(app.state.phase)
        if is_finished(app.state):
            verb = "suspend" if suspend else "resume"
            raise NotSuspendableError(
                f"{kind.kind} {namespace}/{name} has finished ({state}): there is nothing to "
                f"{verb}; submit it again to run it again"
            )
        patch = {"spec": {"suspend": suspend}}
        kube.patch(kind.api_version, kind.kind, name, patch, namespace)
        return Suspension(name, namespace, mode, suspend, state)
    _refuse_native(kube, name, namespace, suspend)
    if denied is not None:
        raise denied
    raise AppNotFoundError(
        f"no SparkApplication {name!r} in namespace {namespace} to "
        f"{'suspend' if suspend else 'resume'}. List them with `sparkplane get apps -n "
        f"{namespace}`."
    )


def _refuse_native(kube: Kube, name: str, namespace: str, suspend: bool) -> None:
    """Raise :class:`NotSuspendableError` if ``name`` is a native submission."""
    from sparkplane.usecases.query import get_app

    try:
        app = get_app(kube, name, namespace)
    except (AppNotFoundError, KubeError):
        return
    if app.mode is not Mode.NATIVE:
        return
    done = "suspended" if suspend else "resumed"
    raise NotSuspendableError(
        f"{name} is a native submission: it cannot be {done}, as nothing but its driver pod "
        f"holds it (no object keeps its spec to start it again). Stop it with `sparkplane kill "
        f"{name} -n {namespace}` (its driver log is archived), or submit it with "
        f"`--mode operator` to be able to suspend and resume it."
    )
