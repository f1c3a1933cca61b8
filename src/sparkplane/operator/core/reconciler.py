"""``decide``: the SparkApplication state machine as a pure function of what is observed.

Given the custom resource (spec + status), the pods the runner found (:class:`Observed`), the
time and the settings, :func:`decide` walks the state table of :mod:`.states`
as far as the observations allow in one pass (a driver seen Ready right away goes Submitted →
DriverRequested → DriverStarted → DriverReady → RunningHealthy in one status write) and returns
a :class:`Decision`. It covers every tolerance of ``spec.applicationTolerations``: timeouts
(driver start, driver ready, executor start), instance thresholds, restart policy with its caps,
counter reset and backoffs, force-termination grace and termination requeue, retention policy and
duration, and TTL after stop; and ``spec.suspend`` (Apache 1.1.0): held or released into
``Suspended``, resumed as a new attempt; and Kueue (an app labelled
``kueue.x-k8s.io/queue-name``): each attempt's Workload first (``AdmissionPending``; its
priority as Kueue's integrations set it, :mod:`.priority`: a named class that does not exist
holds it back, saying so, and is looked at again), the
driver once Kueue admits it (with the admitted counts, pod-set updates and ResourceFlavors;
a flavor not found holds it back, a conflicting one fails the attempt), an eviction
suspends it (``suspendReason: KueueEvicted``) and requeues it as a new attempt once its driver
is gone, and a Workload no attempt holds any more is deleted (:mod:`.workload`). Level-based:
it never depends on which event woke it.

Called by the runner (and the tests, with hand-made pods and clocks). Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pydantic

from sparkplane.errors import Problem, ValidationError
from sparkplane.operator.core import bounds
from sparkplane.operator.core import priority as pr
from sparkplane.operator.core import states as st
from sparkplane.operator.core import workload as wl
from sparkplane.operator.core.decision import (
    Action,
    CreateResources,
    Decision,
    DeleteCustomResource,
    DeleteResources,
    HoldExecutors,
    Notice,
    Transition,
)
from sparkplane.operator.core.driver import AttemptResources, build_attempt, load_app, owner_ref
from sparkplane.operator.core.naming import attempt_app_id, attempt_of, operator_labels
from sparkplane.operator.core.observe import (
    DriverView,
    Observed,
    driver_view,
    executors_of,
    ready_executors,
)
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.spec.conf import main_resource, mapped_conf
from sparkplane.spec.tolerations import ApplicationTolerations
from sparkplane.vocab import (
    APACHE_API_VERSION,
    DRIVER_ROLE,
    EXECUTOR_ROLE,
    KUEUE_API_VERSION,
    QUEUE_NAME_LABEL,
    QUOTA_GATE,
    SPARK_APPLICATION,
    WORKLOAD,
    parse_time,
)

A = st.AppStateSummary
Obj = dict[str, Any]
_MAX_STEPS = 24  # longer than any legal path through the table within one pass


def tolerations_of(cr: Mapping[str, Any]) -> ApplicationTolerations:
    """``spec.applicationTolerations`` with defaults (defaults too if it does not parse)."""
    raw = (cr.get("spec") or {}).get("applicationTolerations") or {}
    try:
        return ApplicationTolerations.model_validate(raw)
    except pydantic.ValidationError:
        return ApplicationTolerations()


class _Pass:
    """One reconcile pass: the status as it evolves, and what was decided on the way."""

    def __init__(
        self,
        cr: Mapping[str, Any],
        observed: Observed,
        now: datetime,
        settings: ReconcileSettings,
    ) -> None:
        self.cr, self.observed, self.now, self.settings = cr, observed, now, settings
        self.meta = cr.get("metadata") or {}
        self.namespace = str(self.meta.get("namespace") or "default")
        self.status: Obj | None = copy.deepcopy(cr.get("status")) or None
        self.tol = tolerations_of(cr)
        self.transitions: list[Transition] = []
        self.actions: list[Action] = []
        self.requeue: float | None = None
        self.check_driver: str | None = None
        self.read_priority: pr.ClassRef | None = None
        self.notices: list[Notice] = []
        self.creating = False
        self._built: dict[tuple[int, bool], AttemptResources | ValidationError] = {}

    # -- reading --------------------------------------------------------------------------
    @property
    def state(self) -> A | None:
        found = st.current_summary(self.status)
        return found if isinstance(found, A) else None

    @property
    def owner_uid(self) -> str:
        return str(self.meta.get("uid") or "")

    @property
    def attempt(self) -> int:
        return attempt_of(self.status)

    @property
    def app_id(self) -> str:
        name = str(self.meta.get("name", ""))
        return attempt_app_id(name, self.namespace, self.attempt)

    def since(self, entry: Mapping[str, Any] | None = None) -> float:
        """Seconds since ``entry`` (default: the current state) was entered."""
        entry = entry if entry is not None else (self.status or {}).get("currentState") or {}
        when = parse_time(entry.get("lastTransitionTime"))
        return 0.0 if when is None else max(0.0, (self.now - when).total_seconds())

    def last_entry(self, state: A) -> Mapping[str, Any] | None:
        history = (self.status or {}).get("stateTransitionHistory") or {}
        for key in sorted(history, key=int, reverse=True):
            if (history[key] or {}).get("currentStateSummary") == state.value:
                return history[key]  # type: ignore[no-any-return]
        return None

    def driver(self) -> DriverView:
        return driver_view(self.observed, self.app_id)

    def seen_driver(self) -> bool:
        """Was this attempt's driver ever seen (alive or as a tombstone)?"""
        return self.driver().pod is not None

    def built(self) -> AttemptResources | ValidationError:
        """This attempt's objects; a queued app's as its Workload's admission lets it run
        (pinned conf, pod-set updates), once admitted."""
        admitted = self.admitted()
        key = (self.attempt, admitted is not None)
        if key not in self._built:
            try:
                admitted = self._flavored(admitted)
                cr = self.cr if admitted is None else wl.admitted_cr(self.cr, admitted)
                built = build_attempt(
                    {**cr, "status": self.status},
                    self.settings.operator_name,
                    templates=self.observed.templates,
                    limits=self.settings.limits,
                    auth_cluster=self.observed.auth_cluster,
                )
                update = None if admitted is None else admitted.updates.get(DRIVER_ROLE)
                if update is not None and admitted is not None and admitted.flavors:
                    own = (built.driver_pod.get("spec") or {}).get("nodeSelector") or {}
                    wl.check_selector(DRIVER_ROLE, own, update)
                self._built[key] = built if update is None else _with_driver_update(built, update)
            except ValidationError as exc:
                self._built[key] = exc
            except wl.FlavorConflict as exc:
                self._built[key] = ValidationError(
                    [Problem("status.admission", str(exc), FLAVOR_CONFLICT_HINT)]
                )
        return self._built[key]

    def _flavored(self, admitted: wl.Admission | None) -> wl.Admission | None:
        """``admitted`` with its ResourceFlavors' node labels and tolerations, when every one
        was read (:func:`wl.with_flavors`; the executors' own node selector checked against
        them); as it is otherwise (only names are needed then: the driver is created only once
        the flavors are resolved, :func:`_admission_pending`)."""
        if admitted is None or wl.unresolved_flavors(admitted, self.observed.flavors):
            return admitted
        flavored = wl.with_flavors(admitted, self.observed.flavors)
        conf = {
            str(k): str(v) for k, v in ((self.cr.get("spec") or {}).get("sparkConf") or {}).items()
        }
        update = flavored.updates.get(EXECUTOR_ROLE)
        if update is not None:
            wl.check_selector(EXECUTOR_ROLE, wl.executor_node_selector(conf), update)
        return flavored

    # -- Kueue ------------------------------------------------------------------------------
    @property
    def queue(self) -> str | None:
        """The LocalQueue the app names (label ``kueue.x-k8s.io/queue-name``), if any."""
        return wl.queue_name(self.cr)

    def workload(self, name: str | None = None) -> Mapping[str, Any] | None:
        """The observed Workload ``name`` (default: this attempt's, named by its app ID)."""
        wanted = name or self.app_id
        found = (w for w in self.observed.workloads if w["metadata"].get("name") == wanted)
        return next(found, None)

    def admitted(self) -> wl.Admission | None:
        """This attempt's admission (None: not queued, not admitted, or evicted)."""
        found = self.workload() if self.queue else None
        return None if found is None else wl.admission(found)

    def workload_object(self, built: AttemptResources) -> Obj | None:
        """The Workload of this attempt: the driver as rendered, the executors it may run, its
        priority as Kueue's integrations set it (:mod:`.priority`). None: not yet, its priority
        class is to be read (the runner reads it and decides again) or does not exist
        (:func:`_priority_missing`)."""
        app = load_app(self.cr, self.observed.templates)
        conf = bounds.with_executor_cap(mapped_conf(app), self.settings.limits)
        main = main_resource(app)
        name = str(self.meta.get("name", ""))
        workload = wl.build_workload(
            {**self.cr, "metadata": {**self.meta, "namespace": self.namespace}},
            built.app_id,
            built.driver_pod,
            conf,
            non_jvm=main is not None and main.type != "java",
            owner=owner_ref(self.cr),
            labels=operator_labels(self.settings.operator_name, name),
        )
        ref = pr.wanted(self.meta.get("labels") or {}, workload["spec"]["podSets"])
        if ref not in self.observed.priority:
            self.read_priority = ref
            return None
        try:
            workload["spec"].update(pr.priority_fields(ref, self.observed.priority[ref]))
        except pr.PriorityClassMissing as exc:
            _priority_missing(self, exc)
            return None
        return workload

    def refs(self) -> tuple[tuple[str, str, str], ...]:
        built = self.built()
        if isinstance(built, AttemptResources):
            return built.refs()
        prefix = self.app_id  # spec no longer renders: fall back to the names of §9.8
        return (
            ("v1", "Pod", f"{prefix}-driver"),
            ("v1", "Service", f"{prefix}-driver-svc"),
            ("v1", "ConfigMap", f"{prefix}-spark-drv-conf-map"),
        )

    def release(self, grace_period_seconds: int | None = None) -> DeleteResources:
        """Delete this attempt's objects; the driver pod only if it is the one observed."""
        driver = self.driver()
        meta = (driver.pod or {}).get("metadata") or {}
        uids = ((str(meta["name"]), str(meta["uid"])),) if driver.exists and meta.get("uid") else ()
        return DeleteResources(
            self.namespace, self.refs(), grace_period_seconds, uids, self.owner_uid
        )

    # -- deciding -------------------------------------------------------------------------
    def go(
        self,
        dst: A,
        message: str,
        *,
        driver: DriverView | None = None,
        fields: Mapping[str, Any] | None = None,
        reason: str = "",
    ) -> None:
        assert self.status is not None
        src = self.state
        seconds = self.since()
        driver_status = (
            driver.reported_status if driver is not None and driver.pod is not None else None
        )
        self.status = st.append_state(
            self.status, dst, self.now, message, driver_status=driver_status, fields=fields
        )
        warning = dst in st.APP_FAILURES
        self.transitions.append(
            Transition(src, dst, message, self.now, seconds, warning, reason=reason)
        )

    def say(self, message: str) -> None:
        """``currentState.message`` says ``message`` (no transition: the history is left
        alone and the next state replaces it); written only when it changes."""
        assert self.status is not None
        current = dict(self.status.get("currentState") or {})
        if current.get("message") != message:
            self.status = {**self.status, "currentState": {**current, "message": message}}

    def requeue_in(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        self.requeue = seconds if self.requeue is None else min(self.requeue, seconds)

    def decision(self) -> Decision:
        changed = self.status != (self.cr.get("status") or None)
        return Decision(
            status=self.status if changed else None,
            actions=tuple(self.actions),
            transitions=tuple(self.transitions),
            requeue_after=self.requeue,
            check_driver=self.check_driver,
            read_priority=self.read_priority,
            notices=tuple(self.notices),
        )


def decide(
    cr: Mapping[str, Any],
    observed: Observed,
    now: datetime,
    settings: ReconcileSettings | None = None,
) -> Decision:
    """Decide the next status and actions of SparkApplication ``cr`` (see the module doc)."""
    p = _Pass(cr, observed, now, settings or ReconcileSettings())
    if p.status and p.state is None:  # a state this table does not know: leave it alone
        return Decision()
    for _ in range(_MAX_STEPS):
        if not _step(p):
            break
    _release_workloads(p)
    _hold_to_quota(p)
    return p.decision()


def _step(p: _Pass) -> bool:
    """Advance one state; False when the pass must stop (waiting, or terminal)."""
    state = p.state
    if state is None:
        p.status = st.new_status(p.now, "Spark application has been created.")
        p.transitions.append(Transition(None, A.SUBMITTED, "created", p.now))
        return True
    if state == A.SUSPENDED:
        return _suspended(p)
    if suspend_requested(p.cr) and state in st.APP_SUSPENDABLE:
        return _suspend(p, state)
    if state in st.APP_INITIALIZING:
        return _initialize(p, state)
    if state in st.APP_QUEUED:
        return _admission_pending(p)
    if state in st.APP_TERMINATED:
        _terminated(p, state)
        return False
    if state in st.APP_STOPPING:
        return _stop(p, state)
    driver = p.driver()
    if (ended := driver.ended()) is not None:
        p.go(ended[0], ended[1], driver=driver)
        return True
    if p.queue and p.observed.kueue and not p.creating and wl.evicted(p.workload()):
        return _suspend(p, state, kueue=True)
    if _driver_vanished(p, state, driver):
        return p.state != state
    if state == A.DRIVER_REQUESTED:
        return _driver_requested(p, driver)
    if state == A.DRIVER_STARTED:
        return _driver_started(p, driver)
    if state in (A.DRIVER_READY, A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS):
        return _starting_executors(p, state, driver)
    target = _running_state(p, ready_executors(p.observed, p.app_id, driver))
    if target != state:
        p.go(target, f"{ready_executors(p.observed, p.app_id, driver)} executors ready")
    return False


SUSPENDED_MESSAGE = "spec.suspend is true: the driver and executors are released"
RESUMED_MESSAGE = "spec.suspend cleared: resuming with a new attempt"
RESUMED = "Resumed"
"""The Event reason of a resume (sparkplane's: Apache 1.1.0's events name ``Suspended`` only)."""


def suspend_requested(cr: Mapping[str, Any]) -> bool:
    """``spec.suspend`` is true (Apache 1.1.0's field; Kubeflow v1beta2's has the same path)."""
    return (cr.get("spec") or {}).get("suspend") is True


KUEUE_ADMISSION_PENDING = "KueueAdmissionPending"
"""The Event reason of a queued app's Workload waiting for admission (Apache 1.1.0's)."""
KUEUE_ADMITTED = "KueueAdmitted"
"""The Event reason of Kueue's admission: the driver is created (Apache 1.1.0's)."""
KUEUE_EVICTED = "KueueEvicted"
"""The Event reason (and ``suspendReason``) of an eviction by Kueue (sparkplane's)."""
EVICTED_MESSAGE = "Kueue evicted Workload {name} ({why}): the driver and executors are released"
REQUEUED_MESSAGE = "requeued after Kueue's eviction: a new attempt waits for admission"


def _suspend(p: _Pass, state: A, *, kueue: bool = False) -> bool:
    """Suspend: release what the attempt made (the release archives the driver's log first, as
    on completion) and enter ``Suspended``. The loop deletes before it writes this status, so
    ``Suspended`` is written only once the deletes were accepted. Nothing was made before the
    driver was requested (``Submitted``) or after the previous attempt was released
    (``ScheduledToRestart``). ``kueue``: Kueue evicted the attempt's Workload (the pass ends
    here: :func:`_suspended` requeues it once the driver is gone)."""
    driver = p.driver()
    if state not in st.APP_INITIALIZING or driver.exists:
        p.actions.append(p.release())
    if not kueue:
        p.go(
            A.SUSPENDED,
            SUSPENDED_MESSAGE,
            driver=driver,
            fields={st.SUSPEND_REASON: st.SUSPEND_BY_SPEC},
        )
        return True
    found = p.workload()
    why = "its Workload is gone" if found is None else wl.pending_message(found)
    p.go(
        A.SUSPENDED,
        EVICTED_MESSAGE.format(name=p.app_id, why=why or "admission removed"),
        driver=driver,
        fields={st.SUSPEND_REASON: st.SUSPEND_BY_KUEUE},
        reason=KUEUE_EVICTED,
    )
    p.requeue_in(p.settings.missing_driver_grace_seconds)
    return False


def _suspend_reason(p: _Pass) -> str:
    return str(((p.status or {}).get("currentState") or {}).get(st.SUSPEND_REASON) or "")


def _suspended(p: _Pass) -> bool:
    """Hold while ``spec.suspend`` is true (releasing again a driver a crash left behind); once
    it is cleared, start a new attempt: ``ScheduledToRestart`` with no backoff and the restart
    counters unchanged (a resume is not a restart). Suspended by Kueue's eviction (and not by
    the spec): the new attempt starts (queued again) once the evicted driver is gone."""
    driver = p.driver()
    deleting = (driver.pod or {}).get("metadata", {}).get("deletionTimestamp")
    releasing = any(isinstance(a, DeleteResources) for a in p.actions)
    evicted = _suspend_reason(p) == st.SUSPEND_BY_KUEUE
    if suspend_requested(p.cr) or (evicted and driver.exists):
        if driver.exists and not deleting and not releasing:
            p.actions.append(p.release())
        if evicted and driver.exists:
            p.requeue_in(p.settings.missing_driver_grace_seconds)
        return False
    assert p.status is not None
    seconds = p.since()
    message = REQUEUED_MESSAGE if evicted else RESUMED_MESSAGE
    p.status = st.restart_status(
        p.status, p.now, message, trim_history=p.settings.trim_history, counts=False
    )
    p.transitions.append(
        Transition(
            A.SUSPENDED,
            A.SCHEDULED_TO_RESTART,
            message,
            p.now,
            seconds,
            reason="" if evicted else RESUMED,
        )
    )
    return True


def _resuming(p: _Pass) -> bool:
    """The current ``ScheduledToRestart`` follows ``Suspended`` (a resume: no backoff)."""
    status = p.status or {}
    previous = (status.get("previousAttemptSummary") or {}).get("stateTransitionHistory") or {}
    current = status.get("stateTransitionHistory") or {}
    entries = [previous[k] for k in sorted(previous, key=int)]
    entries += [current[k] for k in sorted(current, key=int)]
    return len(entries) > 1 and (entries[-2] or {}).get("currentStateSummary") == A.SUSPENDED


def _initialize(p: _Pass, state: A) -> bool:
    if state == A.SCHEDULED_TO_RESTART and not _resuming(p):
        wait = _backoff_seconds(p) - p.since()
        if wait > 0:
            p.requeue_in(wait)
            return False
    if p.observed.create_error:
        p.go(A.SCHEDULING_FAILURE, f"Cannot create driver resources: {p.observed.create_error}")
        return True
    built = p.built()
    if isinstance(built, ValidationError):
        dst = A.FAILED if state == A.SUBMITTED else A.SCHEDULING_FAILURE
        p.go(dst, f"Spec rejected: {built}")
        return True
    if p.queue is not None:
        return _enqueue(p, state, built)
    if p.observed.held:
        _hold(p)
        return False
    p.actions.append(CreateResources(p.namespace, built.objects, built.app_id, p.owner_uid))
    p.creating = True
    p.go(A.DRIVER_REQUESTED, f"Driver pod {built.driver_name} requested")
    return True


WAITING_FOR_CAPACITY = "WaitingForCapacity"
"""The word a held app's ``currentState.message`` starts with (the operator's backpressure)."""


def _hold(p: _Pass) -> None:
    """The runner's backpressure holds this app's driver back: it stays in its state, its
    ``currentState.message`` says so (``sparkplane get``/``kubectl get -o yaml``); the history
    is left alone and the next state replaces the message. Written once: the reason's words
    are constant (the numbers change every time, the runner's metric and log carry them)."""
    p.say(f"{WAITING_FOR_CAPACITY}: {p.observed.held}")
    p.requeue_in(p.observed.held_recheck)


NO_KUEUE = (
    "the app names the Kueue LocalQueue {queue!r} (label {label}), but this cluster does not "
    "serve Kueue's Workload API ({api}): install Kueue (docs/queues.md) or remove the label"
)


def _enqueue(p: _Pass, state: A, built: AttemptResources) -> bool:
    """A queued app's attempt: its Workload first, then wait for Kueue (``AdmissionPending``).
    Without Kueue the app fails at once, saying so (never run unqueued past a quota)."""
    if not p.observed.kueue:
        dst = A.FAILED if state == A.SUBMITTED else A.SCHEDULING_FAILURE
        api = f"{WORKLOAD}.{KUEUE_API_VERSION}"
        p.go(dst, NO_KUEUE.format(queue=p.queue, label=QUEUE_NAME_LABEL, api=api))
        return True
    workload = p.workload_object(built)
    if workload is None:
        return False
    p.actions.append(CreateResources(p.namespace, (workload,), built.app_id, p.owner_uid))
    p.creating = True
    p.go(
        A.ADMISSION_PENDING,
        f"Workload {built.app_id} created in LocalQueue {p.queue}: waiting for Kueue's admission",
        reason=KUEUE_ADMISSION_PENDING,
    )
    return True


def _admission_pending(p: _Pass) -> bool:
    """Wait for Kueue to admit this attempt's Workload (creating it again if it is missing:
    a crash between the status write and the create, or someone deleted it); once admitted,
    create the driver as the admission lets it run."""
    if p.observed.create_error:
        p.go(A.SCHEDULING_FAILURE, f"Cannot create driver resources: {p.observed.create_error}")
        return True
    if p.creating:
        return False
    found = p.workload()
    admitted = None if found is None else wl.admission(found)
    if _waiting_for_flavors(p, admitted):
        return False
    built = p.built()
    if isinstance(built, ValidationError):
        p.go(A.SCHEDULING_FAILURE, f"Spec rejected: {built}")
        return True
    if found is None:
        workload = p.workload_object(built)
        if workload is None:
            return False
        p.actions.append(CreateResources(p.namespace, (workload,), built.app_id, p.owner_uid))
        p.creating = True
        return False
    if admitted is None:
        return False
    p.actions.append(CreateResources(p.namespace, built.objects, built.app_id, p.owner_uid))
    p.creating = True
    p.go(
        A.DRIVER_REQUESTED,
        f"{wl.admitted_message(found, admitted)}; driver pod {built.driver_name} requested",
        reason=KUEUE_ADMITTED,
    )
    return True


KUEUE_FLAVOR_MISSING = "KueueFlavorMissing"
"""The Event reason when an admission names a ResourceFlavor that does not exist (ours)."""
FLAVOR_MISSING_MESSAGE = (
    "{reason}: the admission of Workload {name} names ResourceFlavor {flavors}, which does not "
    "exist: no pod is created until it does (its nodeLabels and tolerations go on the pods); "
    "recreate it, or delete the app"
)
FLAVOR_RECHECK_SECONDS = 10.0  # flavors are read, not watched: how soon to look again
FLAVOR_CONFLICT_HINT = (
    "Kueue's own integrations do not start such a job either (FailedToStart): make the app's "
    "node selector agree with the ClusterQueue's ResourceFlavor nodeLabels, or use another queue"
)


def _waiting_for_flavors(p: _Pass, admitted: wl.Admission | None) -> bool:
    """True if ``admitted`` names ResourceFlavors not found: the driver waits (Kueue's
    integrations retry too: ``podset.FromAssignment``'s read error), its
    ``currentState.message`` and a warning Event (deduplicated) say which, and the app is
    looked at again soon."""
    missing = () if admitted is None else wl.unresolved_flavors(admitted, p.observed.flavors)
    if not missing:
        return False
    message = FLAVOR_MISSING_MESSAGE.format(
        reason=KUEUE_FLAVOR_MISSING, name=p.app_id, flavors=", ".join(missing)
    )
    p.say(message)
    p.notices.append((KUEUE_FLAVOR_MISSING, message, True))
    p.requeue_in(FLAVOR_RECHECK_SECONDS)
    return True


KUEUE_PRIORITY_CLASS_MISSING = "KueuePriorityClassMissing"
"""The Event reason when the priority class a queued app names does not exist (ours)."""
PRIORITY_MISSING_MESSAGE = (
    "{reason}: Workload {name} is not created, so the app is not admitted: {why}; "
    "looked at again every {every:g}s"
)
PRIORITY_RECHECK_SECONDS = 10.0  # priority classes are read, not watched


def _priority_missing(p: _Pass, exc: pr.PriorityClassMissing) -> None:
    """The priority class the app names does not exist: no Workload (Kueue's integrations
    create none either and retry), ``currentState.message`` and a warning Event (deduplicated)
    say which and how to fix it, and the app is looked at again soon (creating the class
    unblocks it)."""
    message = PRIORITY_MISSING_MESSAGE.format(
        reason=KUEUE_PRIORITY_CLASS_MISSING,
        name=p.app_id,
        why=exc,
        every=PRIORITY_RECHECK_SECONDS,
    )
    p.say(message)
    p.notices.append((KUEUE_PRIORITY_CLASS_MISSING, message, True))
    p.requeue_in(PRIORITY_RECHECK_SECONDS)


def _release_workloads(p: _Pass) -> None:
    """Delete the Workloads no attempt holds any more: not this attempt's in a state that holds
    quota (queued, starting, running), and whose attempt's driver is gone (Kueue's own jobs
    keep the quota until their pods have stopped)."""
    stale = []
    for found in p.observed.workloads:
        meta = found.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name or meta.get("deletionTimestamp"):
            continue
        if name == p.app_id and p.state in st.APP_HOLDS_WORKLOAD:
            continue
        if driver_view(p.observed, name).exists:
            continue
        stale.append((KUEUE_API_VERSION, WORKLOAD, name))
    if stale:
        p.actions.append(DeleteResources(p.namespace, tuple(stale), owner_uid=p.owner_uid))


KUEUE_QUOTA_HELD = "KueueQuotaHeld"
"""The Event reason when a queued app asks for more executors than Kueue admitted (ours)."""
KUEUE_QUOTA_EXCEEDED = "KueueQuotaExceeded"
"""The Event reason when executors ran past the admission and were removed (ours)."""


def _hold_to_quota(p: _Pass) -> None:
    """A queued app's executors never exceed what Kueue admitted (:func:`wl.executor_quota`):
    release gated ones while there is room, remove ones that bypassed the gate."""
    state = p.state
    if not (p.queue and p.observed.kueue) or state not in st.APP_STARTING | st.APP_RUNNING:
        return
    admitted = p.admitted()
    if admitted is None:
        return
    quota = wl.executor_quota(executors_of(p.observed, p.app_id, p.driver()), admitted.executors)
    if quota.release or quota.remove:
        p.actions.append(HoldExecutors(p.namespace, quota.release, quota.remove))
    if quota.remove:
        names = ", ".join(name for name, _ in quota.remove)
        p.notices.append(
            (
                KUEUE_QUOTA_EXCEEDED,
                f"executors {names} ran past the {admitted.executors} Kueue admitted without "
                f"the operator's release (their scheduling gate {QUOTA_GATE} was removed): "
                "deleted",
                True,
            )
        )
    if quota.held:
        p.notices.append(
            (
                KUEUE_QUOTA_HELD,
                f"{quota.held} executors wait (scheduling gate {QUOTA_GATE}): the app asked "
                f"for more than the {admitted.executors} executors Kueue admitted",
                False,
            )
        )


def _with_driver_update(built: AttemptResources, update: wl.PodSetUpdate) -> AttemptResources:
    """``built`` with an admission's driver pod-set update on its driver pod."""
    driver = wl.with_pod_set_update(built.driver_pod, update)
    objects = tuple(driver if o is built.driver_pod else o for o in built.objects)
    return AttemptResources(app_id=built.app_id, driver_pod=driver, objects=objects)


def _driver_vanished(p: _Pass, state: A, driver: DriverView) -> bool:
    """Handle a driver absent from the cache; True if it decided something (or asked)."""
    if driver.pod is not None or p.creating:
        return False
    name = f"{p.app_id}-driver"
    built = p.built()
    if isinstance(built, AttemptResources):
        name = built.driver_name
    if p.observed.driver_absent and state == A.DRIVER_REQUESTED and not p.seen_driver():
        # Committed, then never created (a crash or a lost lease between the status write and
        # the creates): create it now. Deterministic names make a concurrent create collide.
        if _waiting_for_flavors(p, p.admitted()):
            return False
        built = p.built()
        if isinstance(built, AttemptResources):
            p.actions.append(CreateResources(p.namespace, built.objects, built.app_id, p.owner_uid))
            p.creating = True
            p.requeue_in(p.settings.missing_driver_grace_seconds)
            return False
    if p.observed.driver_absent:
        p.go(A.FAILED, f"Driver pod {name} not found")
        return True
    grace = p.settings.missing_driver_grace_seconds
    if state == A.DRIVER_REQUESTED and p.since() < grace:
        p.requeue_in(grace - p.since())
        return False
    p.check_driver = name
    return True


def _driver_requested(p: _Pass, driver: DriverView) -> bool:
    if driver.started:
        p.go(A.DRIVER_STARTED, f"Driver pod {_name(driver)} is running")
        return True
    limit = p.tol.application_timeout_config.driver_start_timeout_millis / 1000
    if p.since() >= limit:
        p.go(A.DRIVER_START_TIMED_OUT, f"Driver did not start within {limit:g}s", driver=driver)
        return True
    p.requeue_in(limit - p.since())
    return False


def _driver_started(p: _Pass, driver: DriverView) -> bool:
    if driver.ready:
        p.go(A.DRIVER_READY, f"Driver pod {_name(driver)} is ready")
        return True
    limit = p.tol.application_timeout_config.driver_ready_timeout_millis / 1000
    if p.since() >= limit:
        p.go(A.DRIVER_READY_TIMED_OUT, f"Driver not ready within {limit:g}s", driver=driver)
        return True
    p.requeue_in(limit - p.since())
    return False


def _starting_executors(p: _Pass, state: A, driver: DriverView) -> bool:
    ready = ready_executors(p.observed, p.app_id, driver)
    ic = p.tol.instance_config
    required = max(ic.init_executors, ic.min_executors)
    if ready >= required:
        p.go(_running_state(p, ready), f"{ready} executors ready (required {required})")
        return True
    if state == A.DRIVER_READY:
        p.go(A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS, f"{ready} of {required} executors ready")
    started = p.last_entry(A.DRIVER_READY)
    limit = p.tol.application_timeout_config.executor_start_timeout_millis / 1000
    elapsed = p.since(started) if started is not None else p.since()
    if elapsed >= limit:
        p.go(
            A.EXECUTORS_START_TIMED_OUT,
            f"Only {ready} of {required} executors ready within {limit:g}s",
            driver=driver,
        )
        return True
    p.requeue_in(limit - elapsed)
    return False


def _running_state(p: _Pass, ready: int) -> A:
    ic = p.tol.instance_config
    conf = (p.cr.get("spec") or {}).get("sparkConf") or {}
    dynamic = str(conf.get("spark.dynamicAllocation.enabled", "false")).lower() == "true"
    if ic.min_executors > 0 and ready < ic.min_executors:
        return A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS
    if ic.max_executors > 0 and ready < ic.max_executors and not dynamic:
        return A.RUNNING_WITH_PARTIAL_CAPACITY
    return A.RUNNING_HEALTHY


def _stop(p: _Pass, state: A) -> bool:
    restart_cfg = p.tol.restart_config
    status = _with_counter_reset(p, state)
    restart = st.restart_allowed(restart_cfg.restart_policy.value, state) and _within_limits(
        status, state, p
    )
    if not restart:
        end = st.terminal_state(state, p.tol.resource_retain_policy.value)
        if end == A.TERMINATED_WITHOUT_RELEASE_RESOURCES:
            p.go(end, f"Resources retained (resourceRetainPolicy {p.tol.resource_retain_policy})")
            return True
    driver = p.driver()
    timeouts = p.tol.application_timeout_config
    if not driver.finished:
        force = p.since() * 1000 >= timeouts.force_termination_grace_period_millis
        p.actions.append(p.release(0 if force else None))
        p.requeue_in(timeouts.termination_requeue_period_millis / 1000)
        return False
    if driver.exists and any(t.dst == state for t in p.transitions):
        # reached in this pass: its status is written alone first, and the release (its log
        # archived, its pods deleted) follows in the next pass, so the app's status tells
        # of its driver's end after one write, not after the release's reads and deletes
        p.requeue_in(0.0)
        return False
    p.actions.append(p.release())
    if restart:
        p.status = st.restart_status(
            status, p.now, f"Restarting after {state}", trim_history=p.settings.trim_history
        )
        info = p.status["currentAttemptSummary"]["attemptInfo"]
        field, millis = _backoff_field(p)
        wait = bounds.backoff_millis(millis, p.settings.limits)
        message = (
            f"Attempt {info['id']} scheduled (restart {info['restartCounter']}) in {wait} ms"
            f"{bounds.backoff_note(field, millis, p.settings.limits)}"
        )
        p.transitions.append(Transition(state, A.SCHEDULED_TO_RESTART, message, p.now, p.since()))
        return True
    capped = (
        _capped_by_operator(status, state, p)
        if st.restart_allowed(restart_cfg.restart_policy.value, state)
        else ""
    )
    p.go(A.RESOURCE_RELEASED, f"Driver resources released{f' ({capped})' if capped else ''}")
    return True


def _with_counter_reset(p: _Pass, state: A) -> Obj:
    """The status, with restart counters zeroed if the attempt ran restartCounterResetMillis."""
    assert p.status is not None
    reset = p.tol.restart_config.restart_counter_reset_millis
    history = p.status.get("stateTransitionHistory") or {}
    if reset < 0 or not history:
        return p.status
    first = history[min(history, key=int)] or {}
    started = parse_time(first.get("lastTransitionTime"))
    stopped = parse_time((p.status.get("currentState") or {}).get("lastTransitionTime"))
    if started is None or stopped is None or (stopped - started).total_seconds() * 1000 < reset:
        return p.status
    out = copy.deepcopy(p.status)
    info = out.setdefault("currentAttemptSummary", {}).setdefault("attemptInfo", {})
    for key in ("restartCounter", "failureRestartCounter", "schedulingFailureRestartCounter"):
        info[key] = 0
    return out


def _caps(state: A, p: _Pass) -> list[tuple[str, str, int]]:
    """(field, counter, cap as the user set it) of each restart cap that applies to ``state``."""
    cfg = p.tol.restart_config
    out = [("maxRestartAttempts", "restartCounter", cfg.max_restart_attempts)]
    if state in st.APP_FAILURES and cfg.max_restart_on_failure is not None:
        out.append(("maxRestartOnFailure", "failureRestartCounter", cfg.max_restart_on_failure))
    if state == A.SCHEDULING_FAILURE and cfg.max_restart_on_scheduling_failure is not None:
        out.append(
            (
                "maxRestartOnSchedulingFailure",
                "schedulingFailureRestartCounter",
                cfg.max_restart_on_scheduling_failure,
            )
        )
    return out


def _within_limits(status: Mapping[str, Any], state: A, p: _Pass) -> bool:
    """Another restart is within every cap (each at most the operator's, bounds.attempts_cap)."""
    info = (status.get("currentAttemptSummary") or {}).get("attemptInfo") or {}
    return all(
        int(info.get(counter, 0)) + 1 <= bounds.attempts_cap(cap, p.settings.limits)
        for _, counter, cap in _caps(state, p)
    )


def _capped_by_operator(status: Mapping[str, Any], state: A, p: _Pass) -> str:
    """Why no restart, when it is the operator's cap and not the user's that stopped it."""
    info = (status.get("currentAttemptSummary") or {}).get("attemptInfo") or {}
    for field, counter, cap in _caps(state, p):
        used = int(info.get(counter, 0)) + 1
        if used > bounds.attempts_cap(cap, p.settings.limits) and used <= cap:
            return bounds.attempts_note(field, cap, p.settings.limits)
    return ""


def _backoff_field(p: _Pass) -> tuple[str, int]:
    """(field, millis) of the restart backoff for the state that ended the previous attempt."""
    cfg = p.tol.restart_config
    previous = (
        ((p.status or {}).get("previousAttemptSummary") or {}).get("stateTransitionHistory")
        or (p.status or {}).get("stateTransitionHistory")
        or {}
    )
    ended = None
    for key in sorted(previous, key=int, reverse=True):
        name = (previous[key] or {}).get("currentStateSummary")
        if name in {s.value for s in st.APP_STOPPING}:
            ended = A(name)
            break
    if (
        ended == A.SCHEDULING_FAILURE
        and cfg.restart_backoff_millis_for_scheduling_failure is not None
    ):
        return (
            "restartBackoffMillisForSchedulingFailure",
            cfg.restart_backoff_millis_for_scheduling_failure,
        )
    if ended in st.APP_FAILURES and cfg.restart_backoff_millis_for_failure is not None:
        return "restartBackoffMillisForFailure", cfg.restart_backoff_millis_for_failure
    return "restartBackoffMillis", cfg.restart_backoff_millis


def _backoff_seconds(p: _Pass) -> float:
    """The restart backoff applied (at least the operator's minimum, bounds.backoff_millis)."""
    return bounds.backoff_millis(_backoff_field(p)[1], p.settings.limits) / 1000


RETAIN_EXPIRED = (
    "Spark application resources released after exceeding the configured retain duration."
)
"""Apache's message (Constants.APP_EXCEEDED_RETAIN_DURATION_MESSAGE) for the release a
resource's retention ends with."""


def _terminated(p: _Pass, state: A) -> None:
    """A terminal state, as Apache's AppCleanUpStep: ``TerminatedWithoutReleaseResources`` waits
    out the effective retain duration (the smaller of ``resourceRetainDurationMillis`` and
    ``ttlAfterStopMillis``), then releases and appends ``ResourceReleased``; ``ResourceReleased``
    waits ``ttlAfterStopMillis`` from the state before it (the end it reached, or the retention
    it waited out), then deletes the custom resource."""
    if state == A.TERMINATED_WITHOUT_RELEASE_RESOURCES:
        retain = p.tol.effective_retain_duration_millis()
        if retain < 0:
            return
        remaining = retain / 1000 - p.since()
        if remaining > 0:
            p.requeue_in(remaining)
            return
        if p.driver().exists:
            p.actions.append(p.release())
        p.go(A.RESOURCE_RELEASED, RETAIN_EXPIRED)
    _expire(p)
    driver = p.driver()
    releasing = any(isinstance(a, (DeleteResources, DeleteCustomResource)) for a in p.actions)
    deleting = (driver.pod or {}).get("metadata", {}).get("deletionTimestamp")
    if driver.exists and not deleting and not releasing:
        # released, yet the driver is still there (a crash between commit and delete)
        p.actions.append(p.release())


def _expire(p: _Pass) -> None:
    """``ResourceReleased``: delete the custom resource ``ttlAfterStopMillis`` after the state
    before the release (Apache's getLastObservedStateBeforeTermination), else requeue then."""
    ttl = p.tol.ttl_after_stop_millis
    if ttl < 0:
        return
    history = (p.status or {}).get("stateTransitionHistory") or {}
    keys = sorted(history, key=int)
    before = history[keys[-2]] if len(keys) > 1 else None
    remaining = ttl / 1000 - p.since(before)
    if remaining > 0:
        p.requeue_in(remaining)
        return
    meta = p.meta
    p.actions.append(
        DeleteCustomResource(
            str(p.cr.get("apiVersion", APACHE_API_VERSION)),
            str(p.cr.get("kind", SPARK_APPLICATION)),
            p.namespace,
            str(meta.get("name")),
            str(meta.get("uid", "")),
        )
    )


def _name(driver: DriverView) -> str:
    return str(((driver.pod or {}).get("metadata") or {}).get("name", "?"))
