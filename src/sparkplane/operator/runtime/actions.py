"""Carry out a Decision's actions through the gateway, idempotently.

Owns the I/O half of each action: creating an attempt's objects (AlreadyExists counts as done
only for an object this custom resource controls, so a reconcile repeated after a crash never
makes a second driver; a driver pod of that name that belongs to another attempt is waited for,
and any other object of a taken name that is not the resource's fails the attempt, naming it:
never adopted), deleting objects (NotFound counts as done; only objects the resource controls,
each behind a uid precondition, so neither an object someone else made under that name nor a
newer one is ever deleted), deleting the
custom resource behind a uid precondition, and the Kubernetes Events that record the transitions
(one Event per status write, folding the transitions it made; posted from a small thread pool
so a slow Event never slows a reconcile).

Errors are sorted in two: :class:`CreateRejected` (the API refused the objects: invalid, forbidden,
over quota; the reconciler turns it into ``SchedulingFailure``) and everything else, which the
runner retries with backoff. Called by the runner's loop only; the gateway it is given is fenced.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from datetime import datetime
from typing import Any

from sparkplane.errors import (
    AlreadyExistsError,
    ConflictError,
    KubeError,
    NotFoundError,
    SparkplaneError,
)
from sparkplane.history.logs import archive_refs
from sparkplane.kube import Kube
from sparkplane.operator.core.decision import (
    Action,
    CreateResources,
    DeleteCustomResource,
    DeleteResources,
    HoldExecutors,
    Transition,
)
from sparkplane.security import podpolicy
from sparkplane.settings import Settings
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    QUOTA_GATE,
    QUOTA_RELEASED_ANNOTATION,
    controller_of,
    format_instant,
)

log = logging.getLogger(__name__)
_REJECTED_CODES = frozenset({400, 403, 404, 422})


class CreateRejected(SparkplaneError):
    """The API server refused to create an attempt's objects; retrying will not help."""


class DriverNameTaken(KubeError):
    """A driver pod with this attempt's name exists but belongs to something else (retry later)."""


def controller_uid(obj: Mapping[str, Any] | None) -> str | None:
    """The uid of ``obj``'s controller (its ownerReference with ``controller: true``)."""
    ref = controller_of(obj or {})
    return (str(ref.get("uid") or "") or None) if ref is not None else None


def _same_name_earlier_owner(found: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """``found``'s controller has the kind and name of ``wanted``'s (but another uid)."""
    mine, theirs = controller_of(wanted), controller_of(found)
    return (
        mine is not None
        and theirs is not None
        and (str(theirs.get("kind")), str(theirs.get("name")))
        == (str(mine.get("kind")), str(mine.get("name")))
    )


def _describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}"


def _check_ours(kube: Kube, obj: Mapping[str, Any], action: CreateResources) -> None:
    """An object of this name exists: done if this custom resource controls it, else refused
    (never adopted: releasing the app would delete it)."""
    meta = obj["metadata"]
    found = kube.get_or_none(obj["apiVersion"], obj["kind"], meta["name"], action.namespace)
    what = _describe(obj["kind"], action.namespace, meta["name"])
    if found is None or (found.get("metadata") or {}).get("deletionTimestamp"):
        raise ConflictError(f"{what} is being deleted; retrying")
    owner = controller_uid(found)
    if owner != action.owner_uid and _same_name_earlier_owner(found, obj):
        # a deleted and re-created resource: its predecessor's objects go with the garbage
        # collector (their owner, of this very name, no longer exists); wait for them
        raise ConflictError(f"{what} still belongs to an earlier resource of this name; retrying")
    if owner != action.owner_uid:
        raise CreateRejected(
            f"{what} already exists and is not this resource's (it is not its controller): "
            "the operator neither adopts nor deletes it; choose another name (configMapSpecs, "
            "driverServiceIngressList) or remove that object"
        )


def run(
    kube: Kube,
    actions: tuple[Action, ...],
    pool: Executor | None = None,
    *,
    allow: tuple[str, ...] = (),
    settings: Settings,
) -> None:
    """Execute ``actions`` in order (raises CreateRejected or a retryable error); drivers it
    deletes have their logs archived where ``settings`` say.

    With a ``pool``, the independent requests of one action go out in parallel: the objects the
    driver pod mounts (then the pod), and the deletions of an attempt.
    """
    for action in actions:
        if isinstance(action, CreateResources):
            create(kube, action, pool, allow=allow)
        elif isinstance(action, DeleteResources):
            delete(kube, action, pool, settings=settings)
        elif isinstance(action, DeleteCustomResource):
            delete_custom_resource(kube, action)
        elif isinstance(action, HoldExecutors):
            hold_executors(kube, action)


def _each(pool: Executor | None, fn: Callable[[Any], None], items: list[Any]) -> None:
    if pool is None or len(items) < 2:
        for item in items:
            fn(item)
        return
    for future in [pool.submit(fn, item) for item in items]:
        future.result()  # re-raises the first error


def refuse_by_policy(kube: Kube, action: CreateResources, allow: tuple[str, ...] = ()) -> None:
    """Before anything is created: the pod policy's defaults (pure, every namespace), then the
    namespace's own admission policies on a server-side dry run of each pod (issue 26: the
    operator must not create for a CR author what Kubernetes would refuse them)."""
    problems = podpolicy.check_objects(action.objects, allow=allow)
    if problems:
        details = "; ".join(str(p) for p in problems)
        raise CreateRejected(f"refused by the pod policy (docs/security.md): {details}")
    for pod in podpolicy.pods_to_admit(action.objects):
        try:
            kube.create(dict(pod), namespace=action.namespace, dry_run=True)
        except (AlreadyExistsError, ConflictError):
            pass  # a reconcile after a crash: create() decides
        except KubeError as exc:
            if exc.code in _REJECTED_CODES:
                raise CreateRejected(f"refused by the API server's admission: {exc}") from exc
            raise


def create(
    kube: Kube,
    action: CreateResources,
    pool: Executor | None = None,
    *,
    allow: tuple[str, ...] = (),
) -> None:
    refuse_by_policy(kube, action, allow)

    def one(obj: dict[str, Any]) -> None:
        try:
            kube.create(obj, namespace=action.namespace)
        except AlreadyExistsError:
            if obj.get("kind") == "Pod":
                _check_same_attempt(kube, obj, action)
            elif action.owner_uid and obj.get("kind") != "Secret":
                # a Secret (a SparkCluster's spark.authenticate secret) cannot be read back:
                # the operator may only create Secrets; it never deletes one either (the
                # garbage collector does, with its owner), so taking it as made adopts nothing
                # the release could remove
                _check_ours(kube, obj, action)
        except ConflictError:
            raise
        except KubeError as exc:
            if exc.code in _REJECTED_CODES:
                raise CreateRejected(str(exc)) from exc
            raise

    pods = [o for o in action.objects if o.get("kind") == "Pod"]
    _each(pool, one, [o for o in action.objects if o.get("kind") != "Pod"])
    for pod in pods:  # last: it mounts the others
        one(pod)


def _check_same_attempt(kube: Kube, obj: Mapping[str, Any], action: CreateResources) -> None:
    name = obj["metadata"]["name"]
    found = kube.get_or_none("v1", "Pod", name, action.namespace)
    if found is None:
        raise DriverNameTaken(f"Pod {action.namespace}/{name} is being deleted; retrying")
    labels = (found.get("metadata") or {}).get("labels") or {}
    owners = {r.get("uid") for r in (found.get("metadata") or {}).get("ownerReferences") or []}
    wanted = {r.get("uid") for r in obj["metadata"].get("ownerReferences") or []}
    if labels.get(APP_SELECTOR_LABEL) != action.app_id or not owners & wanted:
        raise DriverNameTaken(
            f"Pod {action.namespace}/{name} exists and belongs to another application or attempt"
        )


def delete(
    kube: Kube,
    action: DeleteResources,
    pool: Executor | None = None,
    *,
    settings: Settings,
) -> None:
    """Delete ``action``'s refs: with ``owner_uid``, each is read and deleted only if that uid
    controls it, behind a precondition on the uid read; pods seen by the reconciler behind the
    uid seen. The driver pods among them are archived first."""
    uids = dict(action.uids)

    def resolve(ref: tuple[str, str, str]) -> tuple[tuple[str, str, str], str | None] | None:
        api_version, kind, name = ref
        known = uids.get(name) if kind == "Pod" else None
        if known or not action.owner_uid:
            return ref, known
        found = kube.get_or_none(api_version, kind, name, action.namespace)
        if found is None:
            return None
        if controller_uid(found) != action.owner_uid:
            log.warning(
                "not deleting %s: it is not this resource's",
                _describe(kind, action.namespace, name),
            )
            return None
        return ref, str(found["metadata"].get("uid") or "") or None

    targets: list[tuple[tuple[str, str, str], str | None]] = []

    def look(ref: tuple[str, str, str]) -> None:
        found = resolve(ref)
        if found is not None:
            targets.append(found)

    def one(target: tuple[tuple[str, str, str], str | None]) -> None:
        (api_version, kind, name), uid = target
        try:
            kube.delete(
                api_version,
                kind,
                name,
                action.namespace,
                grace_period_seconds=action.grace_period_seconds if kind == "Pod" else None,
                uid=uid,
            )
        except NotFoundError:
            pass
        except ConflictError:  # uid precondition: a newer object of that name, not ours to delete
            log.info("not deleting %s %s/%s: it was replaced", kind, action.namespace, name)

    _each(pool, look, list(action.refs))
    order = {ref: i for i, ref in enumerate(action.refs)}
    targets.sort(key=lambda t: order[t[0]])
    archive_refs(
        kube,
        action.namespace,
        [r for r, _ in targets],
        "released by the operator",
        settings=settings,
    )
    _each(pool, one, targets)


def delete_custom_resource(kube: Kube, action: DeleteCustomResource) -> None:
    try:
        kube.delete(action.api_version, action.kind, action.name, action.namespace, uid=action.uid)
    except (NotFoundError, ConflictError):  # gone, or replaced by a new object of that name
        pass


def hold_executors(kube: Kube, action: HoldExecutors) -> None:
    """Remove the quota gate from the executors released (a JSON patch that first tests the
    pod's uid and the gate's place, so it never touches another pod or another gate) and delete
    those past the admission (uid precondition). A pod gone or changed meanwhile is left to the
    next reconcile."""
    for name, uid, index, fresh in action.release:
        patch: list[dict[str, Any]] = [
            {"op": "test", "path": "/metadata/uid", "value": uid},
            {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": QUOTA_GATE},
            {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
        ]
        if fresh is None:  # it has annotations: the mark goes in beside them
            key = QUOTA_RELEASED_ANNOTATION.replace("~", "~0").replace("/", "~1")
            patch.append({"op": "add", "path": f"/metadata/annotations/{key}", "value": "true"})
        else:  # none yet: the map is made, on the pod exactly as observed
            patch.insert(1, {"op": "test", "path": "/metadata/resourceVersion", "value": fresh})
            mark = {QUOTA_RELEASED_ANNOTATION: "true"}
            patch.append({"op": "add", "path": "/metadata/annotations", "value": mark})
        try:
            kube.patch("v1", "Pod", name, patch, action.namespace, patch_type="json")
        except KubeError as exc:  # 404 gone, 409/422 changed (a failed test op answers 422)
            if exc.code not in (404, 409, 422):
                raise
            log.debug("executor %s/%s changed before its release", action.namespace, name)
    for name, uid in action.remove:
        try:
            kube.delete("v1", "Pod", name, action.namespace, uid=uid)
        except (NotFoundError, ConflictError):
            pass


def event_for(
    obj: Mapping[str, Any], transition: Transition, component: str, instance: str
) -> dict[str, Any]:
    """A core/v1 Event about ``obj`` recording ``transition``."""
    meta = obj["metadata"]
    when = format_instant(transition.at)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid"),
        },
        "reason": transition.reason or str(transition.dst),
        "message": transition.message or str(transition.dst),
        "type": "Warning" if transition.warning else "Normal",
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": instance,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": 1,
    }


def fold(transitions: Sequence[Transition]) -> Transition | None:
    """The transitions of one status write as ONE Event: its reason is the first warning state
    (a failure stays visible as a Warning), else the first with a reason of its own (a resume),
    else the last state; its message walks the path."""
    if not transitions:
        return None
    if len(transitions) == 1:
        return transitions[0]
    warning = next((t for t in transitions if t.warning), None)
    named = next((t for t in transitions if t.reason), None)
    chosen = warning or named or transitions[-1]
    path = " -> ".join(str(t.dst) for t in transitions)
    details = "; ".join(t.message for t in transitions if t.message and t.message != "created")
    return replace(
        chosen, src=transitions[0].src, message=f"{path}: {details}" if details else path
    )


#: Repeated Events remembered per recorder (client-go's EventCorrelator keeps 4096 too).
EVENT_CACHE = 4096


def event_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """What makes two Events the same (client-go's ``getEventKey`` less the timestamps): the
    object, the reason, the message and the type."""
    involved = event.get("involvedObject") or {}
    return tuple(
        str(x)
        for x in (
            involved.get("uid"),
            involved.get("kind"),
            involved.get("namespace"),
            involved.get("name"),
            event.get("reason"),
            event.get("message"),
            event.get("type"),
        )
    )


class EventRecorder:
    """Posts Events from background threads; drops (and logs) them when the queue is full.

    Deduplicated as client-go's recorder does: an Event the same as one posted before (same
    object, reason, message and type: :func:`event_key`) is not posted again; the first one's
    ``count`` grows and its ``lastTimestamp`` moves (a PATCH), so ``kubectl describe`` shows
    ``(xN over ...)``. A first Event that has gone (expired, deleted) is posted anew.
    """

    def __init__(self, kube: Kube, component: str, instance: str, *, workers: int = 2) -> None:
        self.kube, self.component, self.instance = kube, component, instance
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=20000)
        self._threads = [
            threading.Thread(target=self._loop, name=f"events-{i}", daemon=True)
            for i in range(max(workers, 1))
        ]
        self._seen: OrderedDict[tuple[str, ...], tuple[str, int]] = OrderedDict()
        self._seen_lock = threading.Lock()
        self.posted = 0
        self.failed = 0
        self.aggregated = 0

    def start(self) -> EventRecorder:
        for thread in self._threads:
            thread.start()
        return self

    def record_all(self, obj: Mapping[str, Any], transitions: Sequence[Transition]) -> None:
        """One Event for the transitions of one status write (see :func:`fold`)."""
        folded = fold(transitions)
        if folded is not None:
            self.record(obj, folded)

    def record(self, obj: Mapping[str, Any], transition: Transition) -> None:
        try:
            self._queue.put_nowait(event_for(obj, transition, self.component, self.instance))
        except queue.Full:
            self.failed += 1

    @property
    def pending(self) -> int:
        """Events queued or being posted."""
        return self._queue.unfinished_tasks

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until queued events are posted (tests and shutdown)."""
        deadline = datetime.now().timestamp() + timeout
        while self._queue.unfinished_tasks and datetime.now().timestamp() < deadline:
            threading.Event().wait(0.05)

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=5)

    def _loop(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                self._post(event)
            except Exception as exc:  # an Event is best effort
                self.failed += 1
                log.debug("could not post event: %s", exc)
            finally:
                self._queue.task_done()

    def _post(self, event: dict[str, Any]) -> None:
        """Create ``event``, or count it on the same Event posted before."""
        key = event_key(event)
        namespace = str(event["metadata"]["namespace"])
        with self._seen_lock:
            seen = self._seen.get(key)
        if seen is not None:
            name, count = seen
            patch = {"count": count + 1, "lastTimestamp": event["lastTimestamp"]}
            try:
                self.kube.patch("v1", "Event", name, patch, namespace)
                self._remember(key, name, count + 1)
                self.aggregated += 1
                return
            except NotFoundError:
                pass
        created = self.kube.create(event)
        self._remember(key, str(created["metadata"]["name"]), 1)
        self.posted += 1

    def _remember(self, key: tuple[str, ...], name: str, count: int) -> None:
        with self._seen_lock:
            self._seen[key] = (name, count)
            self._seen.move_to_end(key)
            while len(self._seen) > EVENT_CACHE:
                self._seen.popitem(last=False)
