"""Loading a SparkApplication manifest (spark.apache.org v1, v1beta1, v1alpha1) into a SparkApp.

Owns the accepted apiVersions/kind and the translation of pydantic errors into
:class:`~sparkplane.errors.Problem` lists with dotted paths and did-you-mean hints. Called by
the CLI (``-f spec.yaml``) and by the operator later. Takes an already parsed dict: reading
files and YAML is the caller's job, so this stays pure.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any

import pydantic

from sparkplane.errors import Problem, ValidationError
from sparkplane.spec import models, tolerations
from sparkplane.spec.models import SparkApp
from sparkplane.vocab import APACHE_GROUP

GROUP = APACHE_GROUP
API_VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta1", f"{GROUP}/v1alpha1")
KIND = "SparkApplication"
# The operator's doc spells it resourceRetentionPolicy; the CRD field is resourceRetainPolicy.
_KNOWN_MISSPELLINGS = {"resourceRetentionPolicy": "resourceRetainPolicy"}


def load_manifest(doc: Mapping[str, Any]) -> SparkApp:
    """Build a :class:`SparkApp` from a SparkApplication manifest, or raise ValidationError.

    Every problem is reported at once: apiVersion/kind, unknown fields (with a suggestion),
    wrong types. Semantic checks are :func:`sparkplane.spec.validate`'s job.
    """
    problems: list[Problem] = []
    api_version = doc.get("apiVersion")
    if api_version not in API_VERSIONS:
        problems.append(
            Problem(
                "apiVersion",
                f"unsupported apiVersion {api_version!r}",
                "one of " + ", ".join(API_VERSIONS),
            )
        )
    if doc.get("kind") != KIND:
        problems.append(Problem("kind", f"expected kind {KIND}, got {doc.get('kind')!r}"))
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "status")}
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        # Server-populated fields are legal in a manifest read back from the cluster.
        body["metadata"] = {
            k: v for k, v in metadata.items() if k in ("name", "namespace", "labels", "annotations")
        }
    try:
        app = SparkApp.model_validate(body)
    except pydantic.ValidationError as exc:
        problems.extend(problems_from_pydantic(exc))
        problems.extend(_semantic_problems_without_unknown(body, exc))
        raise ValidationError(problems, subject="SparkApplication manifest") from exc
    if problems:
        raise ValidationError(problems, subject="SparkApplication manifest")
    return app


def _semantic_problems_without_unknown(
    body: dict[str, Any], exc: pydantic.ValidationError
) -> list[Problem]:
    """When only unknown fields broke parsing, drop them and report the semantic problems too,
    so one run shows everything that is wrong."""
    from sparkplane.spec.validate import collect_problems

    errors = exc.errors()
    if any(e["type"] != "extra_forbidden" for e in errors):
        return []
    trimmed = copy.deepcopy(body)
    for err in errors:
        *parents, last = err["loc"]
        node: Any = trimmed
        for part in parents:
            node = node[part]
        node.pop(last, None)
    try:
        return collect_problems(SparkApp.model_validate(trimmed))
    except pydantic.ValidationError:
        return []


def problems_from_pydantic(exc: pydantic.ValidationError) -> list[Problem]:
    """Turn pydantic errors into problems with dotted camelCase paths and hints."""
    out: list[Problem] = []
    for err in exc.errors():
        path = _dotted(err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            field = str(err["loc"][-1]) if err["loc"] else ""
            out.append(Problem(path, "unknown field", _suggest(field)))
        elif kind == "missing":
            out.append(Problem(path, "required field is missing"))
        else:
            out.append(Problem(path, err["msg"], _type_hint(kind)))
    return out


def _dotted(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int) or "." in part or "/" in part:
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def _all_aliases() -> list[str]:
    names: set[str] = set()
    for module in (models, tolerations):
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel):
                for name, info in obj.model_fields.items():
                    names.add(info.alias or name)
    return sorted(names)


def _suggest(field: str) -> str:
    if field in _KNOWN_MISSPELLINGS:
        return f"did you mean {_KNOWN_MISSPELLINGS[field]!r}?"
    close = difflib.get_close_matches(field, _all_aliases(), n=1, cutoff=0.75)
    return f"did you mean {close[0]!r}?" if close else "remove it or check the spelling"


def _type_hint(kind: str) -> str:
    if kind.startswith("int"):
        return "a whole number"
    if kind in ("enum", "literal_error"):
        return "see the allowed values above"
    return ""
