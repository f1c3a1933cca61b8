"""Local dirs step (Spark's ``LocalDirsFeatureStep``).

Unless a mount named ``spark-local-dir-*`` already exists (from a user volume or template),
adds one emptyDir per local dir (``spark.local.dir``, default ``/var/data/spark-<uuid>``),
``medium: Memory`` when ``spark.kubernetes.local.dirs.tmpfs=true``. Always sets
``SPARK_LOCAL_DIRS``. The uuid comes from :class:`AppIds`, so renders are reproducible. Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, env_var, with_env, with_volumes
from sparkplane.spec.conf import split_list

PREFIX = "spark-local-dir-"


class LocalDirsStep:
    """Give the driver scratch space."""

    name = "local-dirs"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        existing = [
            m
            for m in state.container.get("volumeMounts", [])
            if str(m.get("name", "")).startswith(PREFIX)
        ]
        if existing:
            dirs = [str(m["mountPath"]) for m in existing]
            return state.evolve(
                container=with_env(state.container, [env_var("SPARK_LOCAL_DIRS", ",".join(dirs))])
            )
        dirs = split_list(conf.get("spark.local.dir")) or [
            f"/var/data/spark-{conf.ids.local_dir_uuid}"
        ]
        tmpfs = (conf.get("spark.kubernetes.local.dirs.tmpfs") or "").lower() == "true"
        volumes: list[Obj] = [
            {"emptyDir": {"medium": "Memory"} if tmpfs else {}, "name": f"{PREFIX}{i + 1}"}
            for i in range(len(dirs))
        ]
        mounts = [{"mountPath": d, "name": f"{PREFIX}{i + 1}"} for i, d in enumerate(dirs)]
        pod, container = with_volumes(state.pod, state.container, volumes, mounts)
        container = with_env(container, [env_var("SPARK_LOCAL_DIRS", ",".join(dirs))])
        return state.evolve(pod=pod, container=container)
