"""The Spark image's entrypoint: the command lines it execs for driver, executor and pass-through.

The script runs with bash in a temp dir, with fake ``spark-submit``, ``java``, ``tini``,
``setpriv``, ``id`` and ``getent`` that record their arguments, so each test sees what was exec'd.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sparkplane_devcluster.images.spark import data

RECORDER = """#!/bin/bash
printf '%s\\0' "$@" > "$RECORD_DIR/$(basename "$0")"
"""
TINI = (
    RECORDER
    + """[ "$1" = -s ] && shift
[ "$1" = -- ] && shift
exec "$@"
"""
)
SETPRIV = (
    RECORDER
    + """while [[ "$1" == --* ]]; do shift; done
exec "$@"
"""
)
ID = """#!/bin/bash
if [ "$1" = -g ]; then echo "${FAKE_UID}"; else echo "${FAKE_UID}"; fi
"""
GETENT = "#!/bin/bash\nexit 0\n"


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    home = tmp_path / "spark"
    for folder in ("bin", "jars", "java/bin", "fakebin", "record", "work"):
        (home / folder).mkdir(parents=True)
    scripts = {
        "bin/spark-submit": RECORDER,
        "java/bin/java": RECORDER,
        "fakebin/tini": TINI,
        "fakebin/setpriv": SETPRIV,
        "fakebin/id": ID,
        "fakebin/getent": GETENT,
        "fakebin/myprog": RECORDER,
    }
    for rel, text in scripts.items():
        (home / rel).write_text(text)
        (home / rel).chmod(0o755)
    (home / "entrypoint.sh").write_bytes(data("spark-entrypoint.sh"))
    return home


def run(home: Path, args: list[str], env: dict[str, str] | None = None, uid: int = 185) -> None:
    base = {
        "PATH": f"{home}/fakebin:/usr/bin:/bin",
        "SPARK_HOME": str(home),
        "JAVA_HOME": str(home / "java"),
        "RECORD_DIR": str(home / "record"),
        "FAKE_UID": str(uid),
    }
    proc = subprocess.run(
        ["bash", str(home / "entrypoint.sh"), *args],
        env={**base, **(env or {})},
        cwd=home / "work",
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr


def recorded(home: Path, program: str) -> list[str] | None:
    path = home / "record" / program
    if not path.exists():
        return None
    return path.read_bytes().decode().split("\0")[:-1]


def test_driver_runs_spark_submit_in_client_mode_under_tini(sandbox: Path):
    args = [
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "Pi",
        "local:///a.jar",
    ]
    run(sandbox, ["driver", *args, "arg with space"], {"SPARK_DRIVER_BIND_ADDRESS": "10.1.2.3"})
    submit = str(sandbox / "bin/spark-submit")
    expected = [
        "--conf", "spark.driver.bindAddress=10.1.2.3",
        "--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.1.2.3",
        "--conf", "spark.kubernetes.driver.requestTimeout=60000",
        "--conf", "spark.kubernetes.driver.connectionTimeout=60000",
        "--deploy-mode", "client",
        *args, "arg with space",
    ]  # fmt: skip
    assert recorded(sandbox, "spark-submit") == expected
    assert recorded(sandbox, "tini") == ["-s", "--", submit, *expected]
    assert recorded(sandbox, "setpriv") is None


def test_driver_api_timeouts_default_to_60s_unless_the_app_sets_them(sandbox: Path):
    props = sandbox / "spark.properties"
    props.write_text(
        "#Spark properties\nspark.kubernetes.driver.requestTimeout=5000\n"
        "spark.kubernetes.driverXconnectionTimeout=1\n"  # another key: no match
    )
    run(sandbox, ["driver", "--properties-file", str(props), "--class", "Pi", "local:///a.jar"])
    got = recorded(sandbox, "spark-submit") or []
    confs = [got[i + 1] for i, arg in enumerate(got) if arg == "--conf"]
    assert "spark.kubernetes.driver.connectionTimeout=60000" in confs
    assert not any(c.startswith("spark.kubernetes.driver.requestTimeout") for c in confs)


def test_executor_runs_the_kubernetes_backend_with_the_drivers_settings(sandbox: Path):
    opts = {f"SPARK_JAVA_OPT_{i}": f"-Dopt{i}=v {i}" for i in range(12)}
    env = {
        **opts,
        "SPARK_EXECUTOR_MEMORY": "1024m",
        "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@pi-driver-svc.ns.svc:7078",
        "SPARK_EXECUTOR_ID": "3",
        "SPARK_EXECUTOR_CORES": "2",
        "SPARK_APPLICATION_ID": "spark-abc",
        "SPARK_EXECUTOR_POD_IP": "10.1.2.9",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_NAME": "pi-exec-3",
        "SPARK_EXTRA_CLASSPATH": "/extra/*",
    }
    run(sandbox, ["executor"], env)
    home, work = str(sandbox), str(sandbox / "work")
    classpath = f"{home}/conf::{home}/jars/*:/extra/*:{work}:"
    assert recorded(sandbox, "java") == [
        *(f"-Dopt{i}=v {i}" for i in range(12)),  # numeric order: 2 before 10
        "-Xms1024m", "-Xmx1024m",
        "-cp", classpath,
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
        "--driver-url", "spark://CoarseGrainedScheduler@pi-driver-svc.ns.svc:7078",
        "--executor-id", "3",
        "--cores", "2",
        "--app-id", "spark-abc",
        "--hostname", "10.1.2.9",
        "--resourceProfileId", "0",
        "--podName", "pi-exec-3",
    ]  # fmt: skip
    assert recorded(sandbox, "tini")[:3] == ["-s", "--", f"{home}/java/bin/java"]  # type: ignore[index]


def test_spark_conf_dir_and_hadoop_conf_dir_lead_the_classpath(sandbox: Path):
    env = {"SPARK_CONF_DIR": "/etc/spark", "HADOOP_CONF_DIR": "/etc/hadoop"}
    run(sandbox, ["executor"], {**env, "SPARK_CLASSPATH": "/first"})
    java = recorded(sandbox, "java")
    assert java is not None
    classpath = java[java.index("-cp") + 1]
    assert classpath.startswith(f"/etc/spark:/etc/hadoop:/first:{sandbox}/jars/*")


def test_anything_else_passes_through_without_tini(sandbox: Path):
    run(sandbox, ["myprog", "--flag", "two words"])
    assert recorded(sandbox, "myprog") == ["--flag", "two words"]
    assert recorded(sandbox, "tini") is None


def test_root_drops_to_the_spark_user_for_driver_and_executor(sandbox: Path):
    run(sandbox, ["driver", "--class", "Pi"], {"SPARK_DRIVER_BIND_ADDRESS": "10.0.0.1"}, uid=0)
    setpriv = recorded(sandbox, "setpriv")
    assert setpriv is not None
    assert setpriv[:4] == ["--reuid=185", "--regid=185", "--init-groups", "tini"]
    assert recorded(sandbox, "spark-submit") is not None
