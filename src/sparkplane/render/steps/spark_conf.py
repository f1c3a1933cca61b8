"""spark.properties step (what Spark's ``Client.run`` does after the feature steps, §3.6).

Serialises every system property into the ConfigMap ``spark-drv-<uid>-conf-map`` (Java
Properties format with Spark's comment header; immutable; plus the ``spark.kubernetes.namespace``
data key Spark adds), mounts it at ``/opt/spark/conf`` as volume ``spark-conf-volume-driver``
with explicit items (mode 420), and sets ``SPARK_CONF_DIR``. Always the last step, since it
must see every other step's properties. Pure.

The submitter's ``SPARK_CONF_DIR`` files (``log4j2.properties``...) come in the context
(``RenderContext.conf_files``, read by the submitting use case; rendering reads no files) and
are added as data keys and items beside ``spark.properties``, as Spark's
``KubernetesClientUtils.buildSparkConfDirFilesMap`` adds them; the driver passes them on to its
executors' ConfigMap itself.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.properties import store
from sparkplane.render.state import DriverState, env_var, with_env, with_volumes

CONF_DIR = "/opt/spark/conf"
PROPERTIES = "spark.properties"
VOLUME = "spark-conf-volume-driver"


class SparkConfStep:
    """Write spark.properties into a ConfigMap and mount it."""

    name = "spark-conf"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        name = conf.ids.conf_map_name
        text = store(
            state.system_properties,
            f"Java properties built from Kubernetes config map with name: {name}",
            date=conf.ctx.submit_time,
        )
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": conf.namespace},
            "data": {
                **dict(conf.ctx.conf_files),
                PROPERTIES: text,
                "spark.kubernetes.namespace": conf.namespace,
            },
            "immutable": True,
        }
        volume = {
            "configMap": {
                "items": [
                    {"key": key, "mode": 420, "path": key}
                    for key in sorted({PROPERTIES, *(name for name, _ in conf.ctx.conf_files)})
                ],
                "name": name,
            },
            "name": VOLUME,
        }
        container = with_env(state.container, [env_var("SPARK_CONF_DIR", CONF_DIR)])
        pod, container = with_volumes(
            state.pod, container, [volume], [{"mountPath": CONF_DIR, "name": VOLUME}]
        )
        return state.evolve(pod=pod, container=container, resources=[config_map])
