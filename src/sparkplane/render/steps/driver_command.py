"""Driver command step (Spark's ``DriverCommandFeatureStep``, reference §3.3 and §8).

Sets the container args the stock image entrypoint expects:
``driver [--proxy-user u] --properties-file /opt/spark/conf/spark.properties --class <main>
<resource> <app args...>``. No ``command``: the image's ENTRYPOINT runs. JVM apps without a
jar use ``spark-internal``; Python apps get ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` from
``spark.pyspark.python``/``spark.pyspark.driver.python`` when set (the submitter's environment
is not read). Adds ``spark.kubernetes.resource.type``. Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, append, clone, env_var

SPARK_CONF_FILE = "/opt/spark/conf/spark.properties"
NO_RESOURCE = "spark-internal"


def driver_args(conf: DriverConf) -> list[str]:
    """The container args for this app."""
    args = ["driver"]
    if conf.app.spec.proxy_user:
        args += ["--proxy-user", conf.app.spec.proxy_user]
    args += ["--properties-file", SPARK_CONF_FILE, "--class", conf.main.main_class]
    args.append(conf.main.resource or NO_RESOURCE)
    args += conf.app.spec.driver_args
    return args


class DriverCommandStep:
    """Tell the image entrypoint to start the driver."""

    name = "driver-command"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        container = clone(state.container)
        append(container, "args", driver_args(conf))
        if conf.main.type == "python":
            python = conf.get("spark.pyspark.python")
            driver_python = conf.get("spark.pyspark.driver.python") or python
            env = []
            if python:
                env.append(env_var("PYSPARK_PYTHON", python))
            if driver_python:
                env.append(env_var("PYSPARK_DRIVER_PYTHON", driver_python))
            append(container, "env", env)
        return state.evolve(
            container=container, properties={"spark.kubernetes.resource.type": conf.main.type}
        )
