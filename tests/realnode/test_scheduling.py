"""Real preemption on the real node, and the same SparkPi through the real spark-submit and
through sparkplane, side by side."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for
from tests.integration.parity import run_spark_submit
from tests.realnode.conftest import SERVICE_ACCOUNT
from tests.realnode.sparkapps import (
    SPARK_IMAGE,
    cli,
    driver_pod,
    pod_logs,
    spec,
    submit,
    write,
)
from tests.realnode.test_spark import PI_LINE, _python_app

LOG4J2_MARK = "[log4j2.properties of the submitter's SPARK_CONF_DIR]"
LOG4J2 = (
    "rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\n"
    "appender.console.type = Console\nappender.console.name = console\n"
    "appender.console.layout.type = PatternLayout\n"
    f"appender.console.layout.pattern = {LOG4J2_MARK} %p %c{{1}}: %m%n\n"
)


def test_higher_priority_app_preempts_a_running_one(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path, priority_classes: tuple[str, str]
) -> None:
    """Each driver asks for 1.5 of the node's 2 CPUs: the second can only run by preempting."""
    low, high = priority_classes
    sleeper = (
        "import time\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "time.sleep(600)\n"
    )
    big = {"spark.kubernetes.driver.request.cores": "1500m"}
    low_path = _python_app(kube, namespace, "low", sleeper, tmp_path, conf=big)
    doc = json.loads(json.dumps(__import__("yaml").safe_load(low_path.read_text())))
    doc["spec"]["driver"]["priorityClassName"] = low
    write(tmp_path, doc)
    low_name = submit(kubeconfig, "-f", str(low_path))
    cli(kubeconfig, "wait", low_name, "--for", "running", "-n", namespace, "--timeout", "120")
    hi = spec("high", namespace, python=True, args=["2"], executors=1, conf=big)
    hi["spec"]["driver"]["priorityClassName"] = high
    high_name = submit(kubeconfig, "-f", str(write(tmp_path, hi)))
    cli(kubeconfig, "wait", low_name, "-n", namespace, "--timeout", "180", check=1)
    app = json.loads(cli(kubeconfig, "get", "apps", low_name, "-n", namespace, "-o", "json").stdout)
    text = json.dumps(app)
    assert "Preempted" in text
    high_driver = wait_for(lambda: driver_pod(kube, namespace, high_name), timeout=60, what="high")
    assert high_driver["metadata"]["name"] in text
    cli(kubeconfig, "wait", high_name, "-n", namespace, "--timeout", "300")
    assert PI_LINE in cli(kubeconfig, "logs", high_name, "-n", namespace).stdout


def test_same_sparkpi_through_spark_submit_and_sparkplane(
    real_cluster, kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    common = [
        "--conf", f"spark.kubernetes.container.image={SPARK_IMAGE}",
        "--conf", f"spark.kubernetes.namespace={namespace}",
        "--conf", f"spark.kubernetes.authenticate.driver.serviceAccountName={SERVICE_ACCOUNT}",
        "--conf", "spark.executor.instances=1",
        "--conf", "spark.kubernetes.driver.request.cores=200m",
        "--conf", "spark.kubernetes.executor.request.cores=200m",
        "--conf", "spark.driver.memory=512m",
        "--conf", "spark.executor.memory=512m",
    ]  # fmt: skip
    main = ["local:///opt/spark/examples/src/main/python/pi.py", "4"]
    # the submitter's SPARK_CONF_DIR: spark-submit ships its log4j2.properties into the driver's
    # /opt/spark/conf (the spark.properties ConfigMap), and so must sparkplane (issue 23, item 6)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "log4j2.properties").write_text(LOG4J2)
    env = {"SPARK_CONF_DIR": str(conf_dir)}
    started = time.monotonic()
    theirs_args = ["--name", "via-spark-submit", *common]
    theirs_args += ["--conf", "spark.kubernetes.submission.waitAppCompletion=false"]
    run_spark_submit(real_cluster.server, [*theirs_args, *main], kubeconfig, env=env)

    def their_driver_done() -> dict | None:
        pod = driver_pod(kube, namespace, "via-spark-submit")
        return pod if pod and pod["status"].get("phase") in ("Succeeded", "Failed") else None

    theirs = wait_for(their_driver_done, timeout=300, what="spark-submit's driver", interval=1)
    spark_submit_s = time.monotonic() - started
    assert theirs["status"]["phase"] == "Succeeded"
    their_log = pod_logs(kube, namespace, theirs["metadata"]["name"])
    assert PI_LINE in their_log
    started = time.monotonic()
    out = cli(kubeconfig, "submit", "--wait", "--timeout", "300", "--name", "via-sparkplane",
              *common, *main, env_extra=env)  # fmt: skip
    name = out.stdout.strip().splitlines()[-1].split()[-1].rsplit("/", 1)[-1]
    sparkplane_s = time.monotonic() - started
    our_log = cli(kubeconfig, "logs", name, "-n", namespace).stdout
    assert PI_LINE in our_log
    for log in (their_log, our_log):  # both drivers logged through the submitter's file
        assert f"{LOG4J2_MARK} INFO" in log, log[-2000:]
        assert "Using Spark's default log4j profile" not in log
    print(f"SparkPi end to end: spark-submit {spark_submit_s:.1f}s, sparkplane {sparkplane_s:.1f}s")
