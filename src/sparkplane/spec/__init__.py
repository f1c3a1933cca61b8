"""The Spark application spec: models, loaders, validation and naming.

Public API (pure; no I/O, no cluster access):

- :class:`SparkApp` and the models of ``SparkApplication.spec`` (operator field names plus
  native extras), ``ApplicationTolerations`` and its parts.
- :func:`load_manifest` (spark.apache.org v1 / v1beta1 / v1alpha1) and :func:`from_submit_args`.
- :func:`validate` / :func:`collect_problems`: every problem with its field path.
- Naming: :class:`AppIds`, DNS-1123 checks, Spark's resource-name prefix and label sanitising.
"""

from sparkplane.spec.conf import MainResource, app_name, main_resource, mapped_conf
from sparkplane.spec.manifest import API_VERSIONS, load_manifest, problems_from_pydantic
from sparkplane.spec.models import (
    PYTHON_RUNNER,
    R_RUNNER,
    AppMetadata,
    ConfigMapSpec,
    DriverServiceIngress,
    ExecutorRoleSpec,
    IngressTLS,
    PodTemplateHolder,
    RoleSpec,
    RuntimeVersions,
    SecretsSpec,
    SparkApp,
    SparkApplicationSpec,
    SparkUISpec,
    UIIngressSpec,
    UIServiceSpec,
    VolumeSpec,
)
from sparkplane.spec.naming import (
    AppIds,
    app_name_label,
    label_key_problem,
    label_value_problem,
    resource_name_prefix,
)
from sparkplane.spec.quantities import QuantityError, check_cpu, memory_mib
from sparkplane.spec.submit_args import from_submit_args
from sparkplane.spec.tolerations import (
    ApplicationTimeoutConfig,
    ApplicationTolerations,
    DeploymentMode,
    ExecutorInstanceConfig,
    ResourceRetainPolicy,
    RestartConfig,
    RestartPolicy,
)
from sparkplane.spec.validate import collect_problems, validate
from sparkplane.vocab import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain

__all__ = [
    "API_VERSIONS",
    "PYTHON_RUNNER",
    "R_RUNNER",
    "AppIds",
    "AppMetadata",
    "ApplicationTimeoutConfig",
    "ApplicationTolerations",
    "ConfigMapSpec",
    "DeploymentMode",
    "DriverServiceIngress",
    "ExecutorInstanceConfig",
    "ExecutorRoleSpec",
    "IngressTLS",
    "MainResource",
    "PodTemplateHolder",
    "QuantityError",
    "ResourceRetainPolicy",
    "RestartConfig",
    "RestartPolicy",
    "RoleSpec",
    "RuntimeVersions",
    "SecretsSpec",
    "SparkApp",
    "SparkApplicationSpec",
    "SparkUISpec",
    "UIIngressSpec",
    "UIServiceSpec",
    "VolumeSpec",
    "app_name",
    "app_name_label",
    "check_cpu",
    "collect_problems",
    "from_submit_args",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "label_key_problem",
    "label_value_problem",
    "load_manifest",
    "main_resource",
    "mapped_conf",
    "memory_mib",
    "problems_from_pydantic",
    "resource_name_prefix",
    "validate",
]
