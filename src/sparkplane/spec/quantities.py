"""Spark memory strings, Kubernetes CPU quantities and the other numbers of a spec.

Owns the parsing rules spark-submit applies to ``spark.driver.memory`` and friends (Java's
``JavaUtils.byteStringAs``), a strict check of Kubernetes CPU quantities, executor counts,
ports and overhead factors, each with its bound ("more than any node/cluster has"). A number of
any length is refused with a message, never parsed into an error of Python's own (``int()``
refuses more than 4300 digits; ``float("1e308") * heap`` is infinity). Called by the validator
and by the render steps (the memory formula). Pure: no I/O, no cluster access.
"""

from __future__ import annotations

import math
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
#: Kubernetes supports clusters of at most 150,000 pods ("Considerations for large clusters");
#: a count of executors above it is a typo (2^31 would make Spark's ``toInt`` fail at start).
MAX_EXECUTORS = 150_000
#: Spark reads counts as a Java int: ``spark.dynamicAllocation.maxExecutors`` defaults to it.
JAVA_INT_MAX = 2**31 - 1
MAX_PORT = 65535
#: More digits than any bound here has; checked before ``int()`` (slow, and refused by Python
#: past 4300 digits).
_MAX_DIGITS = 18


class QuantityError(ValueError):
    """A memory or CPU value is malformed. ``hint`` says what would be accepted."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.hint = hint
        super().__init__(message)


def shown(value: object, limit: int = 24) -> str:
    """``value`` quoted for a message; a long one (a 5000-digit number) by its start and size."""
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"'{text[:12]}...' ({len(text)} characters)"


def _digits(text: str) -> int | None:
    """The value of a digit string, None when it is longer than any bound needs (leading zeros
    included: the renderers, Spark and Python's ``int()`` read the whole string)."""
    if len(text) > 2 * _MAX_DIGITS or len(text.lstrip("0")) > _MAX_DIGITS:
        return None
    return int(text)


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
                f"fractional memory {shown(value)} is not supported by Spark",
                hint="use a whole number with a smaller unit, e.g. 1536m instead of 1.5g",
            )
        raise QuantityError(
            f"malformed memory {shown(value)}",
            hint="use a whole number with an optional unit b, k, m, g, t or p, e.g. 512m or 2g",
        )
    number, unit = match.group(1), match.group(2) or default_unit
    if unit in _K8S_SUFFIXES:
        raise QuantityError(
            f"{shown(value)} is a Kubernetes quantity, not a Spark memory string",
            hint=f"write {shown(number)[1:-1]}{unit[0]} (Spark units: b, k, m, g, t, p)",
        )
    if unit not in _BYTE_UNITS:
        raise QuantityError(
            f"unknown memory unit {shown(unit)} in {shown(value)}",
            hint="Spark units are b, k (kb), m (mb), g (gb), t (tb), p (pb)",
        )
    count = _digits(number)
    mib = None if count is None else count * _BYTE_UNITS[unit] // _MIB
    if mib is None or mib > MAX_MEMORY_MIB:
        raise QuantityError(
            f"memory {shown(value)} is more than any node has (the limit is 16t, 16 TiB)",
            hint="check the unit: m is MiB, g is GiB, t is TiB",
        )
    return mib


def positive_memory_mib(value: str) -> int:
    """:func:`memory_mib` of a heap or an overhead, which must be at least 1 MiB (spark-submit:
    "Driver memory must be a positive number"; a pod with no memory for the JVM never runs)."""
    mib = memory_mib(value)
    if mib < 1:
        raise QuantityError(
            f"memory {shown(value)} is less than 1 MiB",
            hint="e.g. 512m or 2g",
        )
    return mib


def overhead_factor(value: str) -> float:
    """A ``memoryOverheadFactor``: a finite number > 0 (Spark: "a double greater than 0")."""
    try:
        factor = float(value.strip())
    except ValueError:
        factor = math.nan
    if not math.isfinite(factor) or factor <= 0:
        raise QuantityError(
            f"overhead factor {shown(value)} must be a finite number > 0",
            hint="a fraction of the heap, e.g. 0.1 for the JVM, 0.4 for Python or R",
        )
    return factor


def check_cpu(value: str) -> None:
    """Check a Kubernetes CPU quantity ("1", "0.5", "500m"); raise QuantityError if malformed."""
    text = value.strip()
    if not _CPU.match(text):
        raise QuantityError(
            f"malformed CPU quantity {shown(value)}",
            hint='use cores ("1", "0.5") or millicores ("500m")',
        )
    number = text[:-1] if text.endswith("m") else text
    cores = float(number) / (1000 if text.endswith("m") else 1)
    if cores <= 0:
        raise QuantityError(f"CPU quantity {shown(value)} must be positive")
    if cores > MAX_CPU:
        raise QuantityError(
            f"CPU quantity {shown(value)} is more than any node has (the limit is {MAX_CPU} cores)",
            hint='use cores ("4") or millicores ("500m")',
        )
    if len(text) > 2 * _MAX_DIGITS:  # 0.000…1 or 000…1: Kubernetes would not take it either
        raise QuantityError(
            f"CPU quantity {shown(value)} is too long", hint='use cores ("1", "0.5") or "500m"'
        )


def positive_int(value: str) -> int:
    """Parse an integer setting such as ``spark.driver.cores``; raise QuantityError if not > 0."""
    text = value.strip()
    if not text.isascii() or not text.isdigit() or not text.strip("0"):  # "0", "00": zero
        raise QuantityError(
            f"{shown(value)} is not a positive whole number",
            hint="Spark core counts are integers; use coreRequest for fractional CPU",
        )
    cores = _digits(text)
    if cores is None or cores > MAX_CPU:
        raise QuantityError(f"{shown(value)} cores is more than any node has (at most {MAX_CPU})")
    return cores


def whole_number(value: str, *, most: int, unit: str = "", hint: str = "") -> int:
    """A count or a port: digits only, at most ``most`` (``unit`` names it in the message)."""
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        raise QuantityError(f"{shown(value)} is not a whole number", hint)
    number = _digits(text)
    if number is None or number > most:
        limit = f"{most} {unit}".strip()
        raise QuantityError(f"{shown(value)} is above the limit of {limit}", hint)
    return number
