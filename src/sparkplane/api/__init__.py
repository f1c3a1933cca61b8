"""The Python API: :class:`SparkPlane` (sync) and :class:`AsyncSparkPlane` (its asyncio facade).

A thin layer over :mod:`sparkplane.usecases`: each method is one use case, the same function the
CLI calls. The names load on first use, so ``sparkplane get apps`` does not import rendering.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkplane.api.aio import AsyncSparkPlane
    from sparkplane.api.client import SparkPlane

__all__ = ["AsyncSparkPlane", "SparkPlane"]

_WHERE = {"SparkPlane": "sparkplane.api.client", "AsyncSparkPlane": "sparkplane.api.aio"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'sparkplane.api' has no attribute {name!r}")
