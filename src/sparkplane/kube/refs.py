"""Small pure helpers about object identity: ``kind ns/name`` strings and owner references."""

from __future__ import annotations

from typing import Any


def describe(obj: dict[str, Any]) -> str:
    """``Kind ns/name`` (or ``Kind name`` for cluster-scoped objects), for messages."""
    meta = obj.get("metadata", {})
    name = meta.get("name") or meta.get("generateName", "?")
    ns = meta.get("namespace")
    return f"{obj.get('kind', '?')} {ns}/{name}" if ns else f"{obj.get('kind', '?')} {name}"


def owner_reference(
    owner: dict[str, Any], *, controller: bool = True, block_owner_deletion: bool | None = None
) -> dict[str, Any]:
    """An ownerReference pointing at ``owner`` (which must have been created: it needs a uid)."""
    meta = owner["metadata"]
    ref: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
    }
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    return ref
