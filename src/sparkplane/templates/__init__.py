"""Template mode (the seed article's way): the user's own manifests with ``${VAR}`` values.

Public API (pure apart from reading the template files):

- :func:`load_app` — read a template directory or multi-document file, substitute, split it
  into a :class:`TemplateApp` (the ``spark-role: driver`` Pod plus its dependents).
- :func:`load_template` / :func:`load_objects` / :func:`parse_objects` — the loading stages.
- :func:`split` — the driver/dependents rule on already loaded objects.
- :func:`substitute_yaml`, :func:`render_yaml`, :func:`expand` — safe envsubst on the YAML tree.
- :func:`parse_assignments` (``--set VAR=value``) and :func:`parse_env` (``values.env``).
"""

from sparkplane.templates.load import (
    TemplateObject,
    load_app,
    load_objects,
    load_template,
    parse_objects,
    read_sources,
    split_objects,
)
from sparkplane.templates.split import DRIVER_ROLE, TemplateApp, is_driver_pod, split
from sparkplane.templates.substitute import (
    Occurrence,
    Substituted,
    expand,
    raise_for_problems,
    render_yaml,
    substitute_yaml,
    unknown_variable_problems,
)
from sparkplane.templates.values import parse_assignments, parse_env

__all__ = [
    "DRIVER_ROLE",
    "Occurrence",
    "Substituted",
    "TemplateApp",
    "TemplateObject",
    "expand",
    "is_driver_pod",
    "load_app",
    "load_objects",
    "load_template",
    "parse_assignments",
    "parse_env",
    "parse_objects",
    "raise_for_problems",
    "read_sources",
    "render_yaml",
    "split",
    "split_objects",
    "substitute_yaml",
    "unknown_variable_problems",
]
