"""Spark memory strings and Kubernetes CPU quantities.

Owns the parsing rules spark-submit applies to ``spark.driver.memory`` and friends (Java's
``JavaUtils.byteStringAs``) and a strict check of Kubernetes CPU quantities. Called by the
validator and by the render steps (the memory formula). Pure: no I/O, no cluster access.
"""

from __future__ import annotations

import re

_MIB = 1024 * 1024
# Suffixes Spark accepts for byte strings, in bytes. Spark lowercases the input first.
_BYTE_UNITS: dict[str, int] = {
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": _MIB,
    "mb": _MIB,
    "g": 1024 * _MIB,
    "gb": 1024 * _MIB,
    "t": 1024 * 1024 * _MIB,
    "tb": 1024 * 1024 * _MIB,
    "p": 1024 * 1024 * 1024 * _MIB,
    "pb": 1024 * 1024 * 1024 * _MIB,
}
_BYTE_STRING = re.compile(r"^([0-9]+)([a-z]+)?$")
_FRACTION = re.compile(r"^([0-9]+\.[0-9]+)([a-z]+)?$")
_K8S_SUFFIXES = {"ki", "mi", "gi", "ti", "pi", "ei"}
_CPU = re.compile(r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:m)?$")
#: Nothing schedules a pod larger than this; above it a value is a typo (10000000000g would
#: otherwise reach Kubernetes as 2^63 bytes and stay Pending forever).
MAX_MEMORY_MIB = 16 * 1024 * 1024  # 16 TiB
MAX_CPU = 4096


class QuantityError(ValueError):
    """A memory or CPU value is malformed. ``hint`` says what would be accepted."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.hint = hint
        super().__init__(message)


def memory_mib(value: str, *, default_unit: str = "m") -> int:
    """Parse a Spark memory string ("2g", "512m", "1024") into MiB, as Spark does.

    A bare number is in ``default_unit`` (MiB for ``spark.{driver,executor}.memory`` and
    ``…memoryOverhead``). Spark truncates when converting to MiB ("1500k" is 1 MiB).
    Kubernetes suffixes such as "1Gi" and fractions such as "1.5g" are rejected, as Spark
    rejects them; the hint proposes the Spark spelling.
    """
    text = value.strip().lower()
    match = _BYTE_STRING.match(text)
    if match is None:
        frac = _FRACTION.match(text)
        if frac is not None:
            raise QuantityError(
                f"fractional memory {value!r} is not supported by Spark",
                hint="use a whole number with a smaller unit, e.g. 1536m instead of 1.5g",
            )
        raise QuantityError(
            f"malformed memory {value!r}",
            hint="use a whole number with an optional unit b, k, m, g, t or p, e.g. 512m or 2g",
        )
    number, unit = match.group(1), match.group(2) or default_unit
    if unit in _K8S_SUFFIXES:
        raise QuantityError(
            f"{value!r} is a Kubernetes quantity, not a Spark memory string",
            hint=f"write {number}{unit[0]} (Spark units: b, k, m, g, t, p)",
        )
    if unit not in _BYTE_UNITS:
        raise QuantityError(
            f"unknown memory unit {unit!r} in {value!r}",
            hint="Spark units are b, k (kb), m (mb), g (gb), t (tb), p (pb)",
        )
    mib = int(number) * _BYTE_UNITS[unit] // _MIB
    if mib > MAX_MEMORY_MIB:
        raise QuantityError(
            f"memory {value!r} is more than any node has (the limit is 16t, 16 TiB)",
            hint="check the unit: m is MiB, g is GiB, t is TiB",
        )
    return mib


def check_cpu(value: str) -> None:
    """Check a Kubernetes CPU quantity ("1", "0.5", "500m"); raise QuantityError if malformed."""
    text = value.strip()
    if not _CPU.match(text):
        raise QuantityError(
            f"malformed CPU quantity {value!r}",
            hint='use cores ("1", "0.5") or millicores ("500m")',
        )
    number = text[:-1] if text.endswith("m") else text
    cores = float(number) / (1000 if text.endswith("m") else 1)
    if cores <= 0:
        raise QuantityError(f"CPU quantity {value!r} must be positive")
    if cores > MAX_CPU:
        raise QuantityError(
            f"CPU quantity {value!r} is more than any node has (the limit is {MAX_CPU} cores)",
            hint='use cores ("4") or millicores ("500m")',
        )


def positive_int(value: str) -> int:
    """Parse an integer setting such as ``spark.driver.cores``; raise QuantityError if not > 0."""
    text = value.strip()
    if not text.isdigit() or int(text) <= 0:
        raise QuantityError(
            f"{value!r} is not a positive whole number",
            hint="Spark core counts are integers; use coreRequest for fractional CPU",
        )
    if int(text) > MAX_CPU:
        raise QuantityError(f"{value!r} cores is more than any node has (at most {MAX_CPU})")
    return int(text)
