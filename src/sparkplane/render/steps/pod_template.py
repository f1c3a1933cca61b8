"""The initial driver state: the user's ``driverSpec.podTemplateSpec``, as Spark loads a template.

Like ``KubernetesUtils.loadPodFromTemplate``: the first container (or the one named by
``spark.kubernetes.driver.podTemplateContainerName``) becomes the Spark container and is taken
out of the pod; other containers stay as sidecars. Template metadata (labels, annotations such
as ``sim.sparkplane.io/run-for``) therefore flows to the driver pod. Called by the pipeline
before the steps. Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, clone


def initial_state(conf: DriverConf) -> DriverState:
    """The state the steps start from: the template pod, or an empty pod and container."""
    template = conf.pod_template("driver")
    if template is None:
        return DriverState(
            pod={"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}},
            container={},
            system_properties=dict(conf.conf),
        )
    pod = clone(template)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod.get("metadata") or {},
        "spec": pod.get("spec") or {},
    }
    containers = list(pod["spec"].get("containers") or [])
    wanted = conf.get("spark.kubernetes.driver.podTemplateContainerName")
    index = next((i for i, c in enumerate(containers) if c.get("name") == wanted), 0)
    container = containers.pop(index) if containers else {}
    pod["spec"]["containers"] = containers
    return DriverState(pod=pod, container=container, system_properties=dict(conf.conf))
