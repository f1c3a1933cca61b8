"""A real Apache Airflow 3 for the tests: SQLite, LocalExecutor, each component its own process.

Airflow runs from ``.venv-airflow`` (``make airflow-venv``: Airflow's lock, this checkout's
sparkplane and the provider), as a user deploys it: ``api-server`` (the execution API the workers
call, and the REST API the test drives with the simple auth manager's all-admins switch),
``scheduler``, ``dag-processor`` and ``triggerer``. A component can be killed (SIGKILL to its
process group: a crash) and started again. Missing ``.venv-airflow`` FAILS the test, naming the
command that makes it.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.integration.helpers import wait_for

ROOT = Path(__file__).parents[2]
VENV = ROOT / ".venv-airflow"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")


class Airflow:
    """One Airflow installation under ``home``, its API on ``port``."""

    def __init__(self, home: Path, port: int, env: dict[str, str]) -> None:
        binary = VENV / "bin" / "airflow"
        assert binary.exists(), f"{binary} is missing: run `make airflow-venv`"
        self.binary = binary
        self.home = home
        self.dags = home / "dags"
        self.dags.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            # a loaded 2-core machine answers the Execution API slower than its 5 s default
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            **env,
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- processes ---------------------------------------------------------------------------
    def cli(self, *args: str, timeout: float = 300) -> str:
        proc = subprocess.run(
            [str(self.binary), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert proc.returncode == 0, f"airflow {' '.join(args)}: {proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def start(self, component: str) -> None:
        out = (self.home / f"{component}.log").open("ab")
        self.procs[component] = subprocess.Popen(
            [str(self.binary), component],
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: its workers die with it
        )

    def kill(self, component: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(component)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)

    def stop_all(self) -> None:
        for component in list(self.procs):
            proc = self.procs[component]
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
            self.kill(component)

    def up(self) -> None:
        self.cli("db", "migrate")
        for component in COMPONENTS:
            self.start(component)
        wait_for(self._healthy, timeout=180, what="the Airflow API server", interval=1)

    def _healthy(self) -> bool:
        for component, proc in self.procs.items():
            assert proc.poll() is None, f"airflow {component} exited: {self.log(component)}"
        try:
            return bool(self.api("GET", "/api/v2/monitor/health"))
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def log(self, component: str) -> str:
        return (self.home / f"{component}.log").read_text(errors="replace")[-4000:]

    # -- the REST API ------------------------------------------------------------------------
    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def dag_known(self, dag_id: str) -> bool:
        try:
            return bool(self.api("GET", f"/api/v2/dags/{dag_id}"))
        except urllib.error.HTTPError:
            return False

    def trigger(self, dag_id: str, run_id: str) -> None:
        wait_for(lambda: self.dag_known(dag_id), timeout=180, what=f"DAG {dag_id}", interval=2)
        self.api(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", {"dag_run_id": run_id, "logical_date": None}
        )

    def ti(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.api(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        )
        return result

    def state(self, dag_id: str, run_id: str, task_id: str) -> str | None:
        """The task instance's state (None: not scheduled yet, or cleared)."""
        try:
            state: str | None = self.ti(dag_id, run_id, task_id).get("state")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        except (urllib.error.URLError, TimeoutError):  # a busy API server: ask again
            return None
        return state

    def wait_state(
        self, dag_id: str, run_id: str, task_id: str, states: tuple[str, ...], timeout: float
    ) -> str:
        def reached() -> str | None:
            now = self.state(dag_id, run_id, task_id)
            if now in ("failed", "upstream_failed") and now not in states:
                raise AssertionError(
                    f"{dag_id}/{task_id} {now}:\n{self.task_log(dag_id, run_id, task_id)}"
                )
            return now if now in states else None

        return wait_for(
            reached, timeout=timeout, what=f"{dag_id}/{task_id} in {states}", interval=1
        )

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        entry = self.api(
            "GET",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
            "?deserialize=true",
        )
        value = entry["value"]
        return json.loads(value) if isinstance(value, str) else value

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        folder = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        return "\n".join(p.read_text(errors="replace") for p in sorted(folder.glob("*.log")))

    def trigger_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        """What the task's triggers logged while it was deferred (Airflow 3: beside its log)."""
        folder = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(folder.glob("*.log.trigger.*.log"))
        )

    def mark(self, dag_id: str, run_id: str, task_id: str, state: str) -> None:
        """Set the task instance's state, as a user's "mark failed/success" does."""
        self.api(
            "PATCH",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}",
            {"new_state": state},
        )

    def clear(self, dag_id: str, run_id: str, task_id: str) -> None:
        self.api(
            "POST",
            f"/api/v2/dags/{dag_id}/clearTaskInstances",
            {"dag_run_id": run_id, "task_ids": [task_id], "dry_run": False, "only_failed": False},
        )
