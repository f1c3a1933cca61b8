"""Local dependencies reach Spark as spark-submit's upload path makes them reach it: one PySpark
job, submitted by the real spark-submit (``spark.kubernetes.file.upload.path`` on a node
directory) and by sparkplane (``--staging-server``), side by side on the real node.

The job is written the way Spark documents ``--files``/``--archives``/``--jars``:

- ``SparkFiles.get`` finds a staged file and a remote (http) one named in the same
  ``spark.files`` list (SPARK-40817) on the driver and on an executor, and the files are in the
  executor's working directory;
- a Python "environment" shipped as ``--archives env.tgz#env`` is unpacked under its alias on
  both sides and runs the driver and the executors' Python workers through the submitter's
  ``PYSPARK_PYTHON=./env/bin/python`` (SPARK-33748): its module imports only under that Python;
- a staged ``--jars`` jar reaches the executors' class loader: a JVM closure reads the staged
  file through the JVM's ``SparkFiles.get`` on an executor (and the driver).

Both submissions must print the same answers.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.kube_owner import pod_owner_checker
from sparkplane.staging.settings import StagingSettings
from sparkplane.usecases.stage import TOKEN_ENV
from sparkplane_devcluster import DevCluster
from tests.integration.helpers import wait_for
from tests.integration.parity import spark_home, spark_submit_command, spark_submit_env
from tests.realnode.conftest import SERVICE_ACCOUNT
from tests.realnode.sparkapps import DONE, SPARK_IMAGE, driver_pod, pod_logs
from tests.staging_server import serve_in_background

JOB = """\
import json, os, sys
from pyspark import SparkFiles
from pyspark.sql import SparkSession


def seen():
    import envmark  # importable only under ./env/bin/python (the archive's lib/)
    read = lambda name: open(SparkFiles.get(name)).read().strip()
    return {
        "staged": read("data.txt"),
        "remote": read("remote.txt"),
        "in_cwd": sorted(n for n in ("data.txt", "remote.txt") if os.path.isfile(n)),
        "alias": open("env/lib/envmark.py").read().count("MARK"),
        "python": envmark.MARK + ":" + os.environ.get("SPARKPLANE_TEST_ENV", "-"),
    }


spark = SparkSession.builder.appName("local-deps").getOrCreate()
sc = spark.sparkContext
jvm = sc._jvm.org.sparkplane.test.Probe
driver = seen()
driver["jvm"] = jvm.driver("data.txt")
executor = sc.parallelize([0], 1).map(lambda _: seen()).collect()[0]
executor["jvm"] = jvm.executor(sc._jsc, "data.txt")
print("LOCAL-DEPS " + json.dumps({"driver": driver, "executor": executor}, sort_keys=True))
spark.stop()
"""

ENV_PYTHON = """\
#!/bin/sh
# a stand-in for a venv-pack/conda-pack environment: its own lib/ on the path
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/lib${PYTHONPATH:+:$PYTHONPATH}" SPARKPLANE_TEST_ENV=env
exec python3 "$@"
"""

PROBE = """\
package org.sparkplane.test;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import org.apache.spark.SparkFiles;
import org.apache.spark.api.java.JavaSparkContext;

public final class Probe {
  private Probe() {}

  public static String driver(String name) throws Exception {
    return new String(Files.readAllBytes(Paths.get(SparkFiles.get(name)))).trim();
  }

  public static String executor(JavaSparkContext sc, String name) {
    return sc.parallelize(Arrays.asList(0), 1).map(x -> driver(name)).collect().get(0);
  }
}
"""

EXPECTED_SIDE = {
    "staged": "staged-data",
    "remote": "remote-data",
    "alias": 1,
    "python": "from-the-archive:env",
    "jvm": "staged-data",
}


def _write_inputs(work: Path) -> None:
    """The submitter's files: job.py, data.txt, env.tgz (bin/python + lib/envmark.py), probe.jar."""
    (work / "job.py").write_text(JOB)
    (work / "data.txt").write_text("staged-data\n")
    env = work / "env-src"
    (env / "bin").mkdir(parents=True)
    (env / "lib").mkdir()
    (env / "bin" / "python").write_text(ENV_PYTHON)
    (env / "bin" / "python").chmod(0o755)
    (env / "lib" / "envmark.py").write_text('MARK = "from-the-archive"\n')
    with tarfile.open(work / "env.tgz", "w:gz") as tar:
        for part in ("bin", "lib"):
            tar.add(env / part, arcname=part)
    src = work / "probe-src" / "org" / "sparkplane" / "test"
    src.mkdir(parents=True)
    (src / "Probe.java").write_text(PROBE)
    classes = work / "probe-classes"
    javac = shutil.which("javac")
    assert javac, "javac (JDK 17) is needed to build the probe jar"
    cp = str(spark_home() / "jars" / "*")
    subprocess.run(
        [javac, "--release", "17", "-cp", cp, "-d", str(classes), str(src / "Probe.java")],
        check=True,
        timeout=300,
    )
    jar = shutil.which("jar")
    assert jar, "jar (JDK 17) is needed to build the probe jar"
    subprocess.run([jar, "cf", str(work / "probe.jar"), "-C", str(classes), "."], check=True)


@pytest.fixture
def work() -> Iterator[Path]:
    """A directory the Spark user (185) may read through a hostPath: spark-submit's upload path
    lives in it."""
    path = Path(tempfile.mkdtemp(prefix="sp-local-deps-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def remote(real_cluster: DevCluster, work: Path) -> Iterator[str]:
    """``remote.txt`` over plain http on the host address pods reach; its URL."""
    served = work / "served"
    served.mkdir()
    (served / "remote.txt").write_text("remote-data\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(served))
    server = http.server.ThreadingHTTPServer((real_cluster.node_plan.host_ip, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{real_cluster.node_plan.host_ip}:{server.server_address[1]}/remote.txt"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def _answers(kube: Kube, namespace: str, app: str) -> dict[str, object]:
    def done() -> dict[str, Any] | None:
        pod = driver_pod(kube, namespace, app)
        return pod if pod and pod["status"].get("phase") in DONE else None

    pod = wait_for(done, timeout=900, what=f"{app}'s driver to finish", interval=2)
    assert pod is not None
    logs = pod_logs(kube, namespace, pod["metadata"]["name"])
    assert pod["status"]["phase"] == "Succeeded", logs[-4000:]
    line = next((x for x in logs.splitlines() if x.startswith("LOCAL-DEPS ")), None)
    assert line is not None, logs[-4000:]
    answers: dict[str, object] = json.loads(line.removeprefix("LOCAL-DEPS "))
    return answers


@pytest.mark.timeout(1800)
def test_staged_files_archives_and_jars_reach_spark_as_with_spark_submit(
    real_cluster: DevCluster,
    kubeconfig: Path,
    kube: Kube,
    namespace: str,
    work: Path,
    remote: str,
    tmp_path: Path,
) -> None:
    _write_inputs(work)
    upload = work / "upload"
    upload.mkdir(mode=0o777)
    upload.chmod(0o777)
    common = [
        "--conf", f"spark.kubernetes.container.image={SPARK_IMAGE}",
        "--conf", f"spark.kubernetes.namespace={namespace}",
        "--conf", f"spark.kubernetes.authenticate.driver.serviceAccountName={SERVICE_ACCOUNT}",
        "--conf", "spark.kubernetes.container.image.pullPolicy=IfNotPresent",
        "--conf", "spark.executor.instances=1",
        "--conf", "spark.kubernetes.driver.request.cores=200m",
        "--conf", "spark.kubernetes.executor.request.cores=200m",
        "--conf", "spark.driver.memory=512m",
        "--conf", "spark.executor.memory=512m",
        "--files", f"data.txt,{remote}",
        "--archives", "env.tgz#env",
        "--jars", "probe.jar",
    ]  # fmt: skip
    python_env = {"PYSPARK_PYTHON": "./env/bin/python"}
    # spark-submit: uploads to a node directory the driver mounts at the same path
    theirs = [
        "--name", "via-spark-submit", *common,
        "--conf", f"spark.kubernetes.file.upload.path=file://{upload}",
        "--conf", f"spark.kubernetes.driver.volumes.hostPath.up.mount.path={upload}",
        "--conf", f"spark.kubernetes.driver.volumes.hostPath.up.options.path={upload}",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "job.py",
    ]  # fmt: skip
    proc = subprocess.run(
        spark_submit_command(real_cluster.server, theirs),
        env={**spark_submit_env(kubeconfig), **python_env},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    # sparkplane: the same arguments, through a staging server the pods reach
    secret = secrets.token_urlsafe(32)
    settings = StagingSettings(
        host=real_cluster.node_plan.host_ip,
        port=0,
        storage_dir=tmp_path / "bundles",
        db_path=tmp_path / "meta.sqlite3",
        fsync=False,
        upload_secrets=(UploadSecret("realnode-test", secret),),
    )
    with serve_in_background(settings, pod_owner_checker(kube)) as url:
        env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig), **python_env)
        env[TOKEN_ENV] = secret
        argv = ["submit", "-n", namespace, "--staging-server", url, "--name", "via-sparkplane"]
        ours = subprocess.run(
            [sys.executable, "-m", "sparkplane.cli", *argv, *common, "job.py"],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert ours.returncode == 0, ours.stdout + ours.stderr
        their_answers = _answers(kube, namespace, "via-spark-submit")
        our_answers = _answers(kube, namespace, "via-sparkplane")
    side = {**EXPECTED_SIDE, "in_cwd": ["data.txt", "remote.txt"]}
    expected = {"driver": side, "executor": side}
    assert their_answers == expected, their_answers
    assert our_answers == expected, our_answers
