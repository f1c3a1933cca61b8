"""The driver's step list as data: every built-in step, in order, with when it applies.

Spark's ``KubernetesDriverBuilder`` order (reference §2.2) comes first, then sparkplane's
extras, then ``spark-conf``, which serialises every system property and so runs last (Spark
does that in ``Client.run`` after the feature steps). User steps
(:mod:`sparkplane.render.user_steps`) run after every other built-in, right before
``spark-conf``, as Spark runs ``spark.kubernetes.driver.pod.featureSteps`` after its own.

Each row's ``when`` is the one place its condition is written; the step itself assumes it.
There is no executor step list: Spark's driver builds executor pods itself (its executor
feature steps run in the driver JVM), and sparkplane only ships it the executor pod template
(``executor-template``). Pure.
"""

from __future__ import annotations

from sparkplane.render.step import StepSpec
from sparkplane.render.steps import (
    env_secrets,
    executor_template,
    extra_resources,
    hadoop_conf,
    mount_secrets,
    network_policy,
    placement,
    priority_class,
    service_account,
    spark_ui,
    staging,
    volumes,
)
from sparkplane.render.steps.basic_driver import BasicDriverStep
from sparkplane.render.steps.driver_command import DriverCommandStep
from sparkplane.render.steps.driver_service import DriverServiceStep
from sparkplane.render.steps.local_dirs import LocalDirsStep
from sparkplane.render.steps.spark_conf import SparkConfStep

SPARK_CONF = "spark-conf"
"""The id of the last step; user steps run right before it."""

DRIVER_STEPS: tuple[StepSpec, ...] = (
    StepSpec(
        "basic-driver",
        BasicDriverStep(),
        required=True,
        about="BasicDriverFeatureStep: pod name, labels, image, ports, env, cpu and memory",
    ),
    StepSpec(
        "service-account",
        service_account.ServiceAccountStep(),
        service_account.applies,
        about="DriverKubernetesCredentialsFeatureStep: the driver's service account",
    ),
    StepSpec(
        "driver-service",
        DriverServiceStep(),
        about="DriverServiceFeatureStep: the headless Service executors reach the driver by",
    ),
    StepSpec(
        "network-policy",
        network_policy.NetworkPolicyStep(),
        network_policy.applies,
        about="NetworkPolicyFeatureStep (Spark 4.2+): only the app's pods reach its executors",
    ),
    StepSpec(
        "mount-secrets",
        mount_secrets.MountSecretsStep(),
        mount_secrets.applies,
        about="MountSecretsFeatureStep: spark.kubernetes.driver.secrets.* as volumes",
    ),
    StepSpec(
        "env-secrets",
        env_secrets.EnvSecretsStep(),
        env_secrets.applies,
        about="EnvSecretsFeatureStep: spark.kubernetes.driver.secretKeyRef.* as env",
    ),
    StepSpec(
        "volumes",
        volumes.VolumesStep(),
        volumes.applies,
        about="MountVolumesFeatureStep: spark.kubernetes.driver.volumes.*, OnDemand claims",
    ),
    StepSpec(
        "staging",
        staging.StagingStep(),
        staging.applies,
        required=True,
        needs=("executor-template",),
        about="sparkplane: the init-container that fetches localized dependencies",
    ),
    StepSpec(
        "driver-command",
        DriverCommandStep(),
        about="DriverCommandFeatureStep: the container args the image entrypoint reads",
    ),
    StepSpec(
        "hadoop-conf",
        hadoop_conf.HadoopConfStep(),
        hadoop_conf.applies,
        about="HadoopConf/KerberosConf steps: existing Hadoop and krb5 ConfigMaps",
    ),
    StepSpec(
        "executor-template",
        executor_template.ExecutorTemplateStep(),
        executor_template.applies,
        about="PodTemplateConfigMapStep: the executor pod template in a ConfigMap",
    ),
    StepSpec(
        "local-dirs",
        LocalDirsStep(),
        about="LocalDirsFeatureStep: scratch emptyDirs and SPARK_LOCAL_DIRS",
    ),
    StepSpec(
        "placement",
        placement.PlacementStep(),
        placement.applies,
        about="sparkplane: the driver's affinity and tolerations",
    ),
    StepSpec(
        "priority-class",
        priority_class.PriorityClassStep(),
        priority_class.applies,
        about="sparkplane: the driver's priorityClassName",
    ),
    StepSpec(
        "spark-ui",
        spark_ui.SparkUIStep(),
        spark_ui.applies,
        about="sparkplane: spec.sparkUI's Service and Ingress",
    ),
    StepSpec(
        "extra-resources",
        extra_resources.ExtraResourcesStep(),
        extra_resources.applies,
        about="sparkplane: configMapSpecs and driverServiceIngressList",
    ),
    StepSpec(
        SPARK_CONF,
        SparkConfStep(),
        required=True,
        about="Client.run: every system property into the spark.properties ConfigMap",
    ),
)
"""The driver's built-in steps in the order they run (ids are stable; see docs/architecture.md).

``required`` steps cannot be excluded: ``basic-driver`` names the pod and its container,
``staging`` fills the directory the localized dependency URIs point at (and ``needs`` the
executor template, which gives executors the same init-container), ``spark-conf`` writes the
properties file the driver's args name."""

DRIVER_STEP_IDS: tuple[str, ...] = tuple(s.name for s in DRIVER_STEPS)
"""The built-in ids, in order."""
