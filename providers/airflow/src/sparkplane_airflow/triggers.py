"""``SparkPlaneAppTrigger``: waits in the triggerer until a Spark app has finished.

It holds no worker slot and no watch of its own (:mod:`sparkplane_airflow.waiter`). Its kwargs
(persisted by Airflow) name the app, so a restarted triggerer resumes the same wait on the same
app. Past ``deadline`` it kills the app (its driver log is archived by sparkplane's kill) and
reports ``timeout``; a user's clear, mark-failed or mark-success kills the app (``on_kill``);
a triggerer's restart does not. While it waits, the driver's log goes live into the task log
(:mod:`sparkplane_airflow.livelog`; ``live_log=False``: only the last lines, once it ended).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from sparkplane_airflow import livelog, outcome, waiter
from sparkplane_airflow.hooks import SparkPlaneHook

#: seconds the live log's stream has, once the app finished, to end with the driver's pod
FLUSH = 15.0


class SparkPlaneAppTrigger(BaseTrigger):
    """Fires once, when the app ``namespace/name`` has finished, is gone or ran out of time.

    The event: :func:`sparkplane_airflow.outcome.result` plus ``status`` (``finished``,
    ``gone``, ``timeout``, ``error``). ``owns_app`` (the operator's apps; not a sensor's):
    kill the app past the deadline and when a user kills the task.
    """

    def __init__(
        self,
        name: str,
        namespace: str,
        sparkplane_conn_id: str = SparkPlaneHook.default_conn_name,
        submission_id: str | None = None,
        deadline: float | None = None,
        owns_app: bool = True,
        live_log: bool = True,
    ) -> None:
        super().__init__()
        self.name = name
        self.namespace = namespace
        self.sparkplane_conn_id = sparkplane_conn_id
        self.submission_id = submission_id
        self.deadline = deadline
        self.owns_app = owns_app
        self.live_log = live_log

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "name": self.name,
                "namespace": self.namespace,
                "sparkplane_conn_id": self.sparkplane_conn_id,
                "submission_id": self.submission_id,
                "deadline": self.deadline,
                "owns_app": self.owns_app,
                "live_log": self.live_log,
            },
        )

    def _event(self, status: str, **fields: Any) -> TriggerEvent:
        base: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        base.update(state="", reason="")
        base.update(submission_id=self.submission_id, message="")
        return TriggerEvent({**base, **fields, "status": status})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = SparkPlaneHook(self.sparkplane_conn_id)
        try:
            connect = await hook.aconnect_kwargs()
            watch = await waiter.shared(connect, self.namespace)
            self.log.info("waiting for %s/%s to finish", self.namespace, self.name)
            live = self._follow(watch)
            try:
                app = await watch.finished(self.name, self.deadline)
            finally:
                streamed = await self._settle(live)
        except waiter.AppGone:
            yield self._event("gone", message="the app was deleted before it finished")
            return
        except TimeoutError:
            if self.owns_app:
                self.log.info("deadline passed: killing %s/%s", self.namespace, self.name)
                await self._kill(wait=True)
            killed = " and was killed" if self.owns_app else ""
            yield self._event("timeout", message=f"the app ran past its deadline{killed}")
            return
        except Exception as exc:  # the event carries it to the task, which fails with it
            yield self._event("error", message=f"{type(exc).__name__}: {exc}")
            return
        yield TriggerEvent(
            {**outcome.result(app, self.submission_id), "status": "finished", "live_log": streamed}
        )

    def _follow(self, watch: waiter.Watch) -> asyncio.Task[bool] | None:
        """The live copy of the driver's log, in a task of this trigger's (its log context)."""
        if not self.live_log:
            return None
        return asyncio.get_running_loop().create_task(
            livelog.follow(watch.sp.sync, self.name, self.namespace, self.log.info)
        )

    @staticmethod
    async def _settle(live: asyncio.Task[bool] | None) -> bool:
        """Whether the whole driver log went by live: its stream gets :data:`FLUSH` seconds to
        end with the pod, then it is cancelled."""
        if live is None:
            return False
        done, _ = await asyncio.wait({live}, timeout=FLUSH)
        if not done:
            live.cancel()
            return False
        return not live.cancelled() and live.exception() is None and live.result()

    async def _kill(self, *, wait: bool) -> None:
        from sparkplane.errors import AppNotFoundError

        connect = await SparkPlaneHook(self.sparkplane_conn_id).aconnect_kwargs()
        watch = await waiter.shared(connect, self.namespace)
        try:
            await watch.sp.kill(self.name, namespace=self.namespace, wait=wait)
        except AppNotFoundError:
            pass

    async def on_kill(self) -> None:
        """The task was cleared, marked failed or marked success while deferred: kill the app."""
        if self.owns_app:
            self.log.info("task killed by a user: killing %s/%s", self.namespace, self.name)
            await asyncio.shield(self._kill(wait=False))
