"""Driver command step (Spark's ``DriverCommandFeatureStep``, reference §3.3 and §8).

Sets the container args the stock image entrypoint expects:
``driver [--proxy-user u] --properties-file /opt/spark/conf/spark.properties --class <main>
<resource> <app args...>``. No ``command``: the image's ENTRYPOINT runs. JVM apps without a
jar use ``spark-internal``; Python apps get ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` as
Spark's step chooses them: ``PYSPARK_PYTHON`` = ``spark.pyspark.python``, else the submitter's
``PYSPARK_PYTHON``; ``PYSPARK_DRIVER_PYTHON`` = ``spark.pyspark.driver.python``, else
``spark.pyspark.python``, else the submitter's ``PYSPARK_DRIVER_PYTHON``, else its
``PYSPARK_PYTHON``. The submitter's values come in the ``RenderContext`` (read from the
environment by :class:`sparkplane.settings.Settings`, never here). E.g. an environment shipped
with ``--archives env.tgz#env`` and ``PYSPARK_PYTHON=./env/bin/python`` (SPARK-33748: the
driver unpacks archives into its working directory too). Adds ``spark.kubernetes.resource.type``.
Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, append, clone, env_var
from sparkplane.vocab import NO_RESOURCE

SPARK_CONF_FILE = "/opt/spark/conf/spark.properties"


def python_env(conf: DriverConf) -> list[tuple[str, str]]:
    """``(name, value)`` of ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON``, those set."""
    ctx = conf.ctx
    python = conf.get("spark.pyspark.python") or ctx.pyspark_python
    driver_python = (
        conf.get("spark.pyspark.driver.python")
        or conf.get("spark.pyspark.python")
        or ctx.pyspark_driver_python
        or ctx.pyspark_python
    )
    pairs = (("PYSPARK_PYTHON", python), ("PYSPARK_DRIVER_PYTHON", driver_python))
    return [(name, value) for name, value in pairs if value]


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
            append(container, "env", [env_var(n, v) for n, v in python_env(conf)])
        return state.evolve(
            container=container, properties={"spark.kubernetes.resource.type": conf.main.type}
        )
