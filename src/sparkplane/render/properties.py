"""Java ``Properties.store`` serialisation, as Spark writes ``spark.properties``.

Spark stores the driver's configuration with ``java.util.Properties.store(Writer, comment)``:
a ``#<comment>`` line, a ``#<date>`` line, then ``key=value`` lines with Java's escaping
(``\\``, ``=``, ``:``, ``#``, ``!``, tabs and newlines; spaces in keys and a leading space in
values). The Writer variant does not escape non-ASCII. Called by the pipeline. Pure.

Deliberate deviation: entries are sorted by key (as Java 18+ does); Java 17 writes them in hash
order, which carries no meaning. Readers must parse the file, not compare text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f",
            "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!"}  # fmt: skip


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for i, char in enumerate(text):
        if char == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)


def java_date(moment: datetime) -> str:
    """``java.util.Date.toString()`` of a UTC moment: ``Sat Nov 21 12:41:24 UTC 2026``."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%a %b %d %H:%M:%S UTC %Y")


def store(properties: Mapping[str, str], comment: str, *, date: datetime | None = None) -> str:
    """Serialise ``properties`` like ``Properties.store``; the date line only if ``date``."""
    lines = [f"#{comment}"]
    if date is not None:
        lines.append(f"#{java_date(date)}")
    lines.extend(
        f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}"
        for k, v in sorted(properties.items())
    )
    return "\n".join(lines) + "\n"


def load(text: str) -> dict[str, str]:
    """Parse what :func:`store` writes (and simple Java properties files) back into a dict."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.lstrip()
        if not line or line[0] in "#!":
            continue
        key: list[str] = []
        value: list[str] = []
        i, escaped = 0, False
        target = key
        while i < len(line):
            char = line[i]
            if escaped:
                target.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(char, char))
                escaped = False
            elif char == "\\":
                escaped = True
            elif target is key and char in "=:":
                target = value
            else:
                target.append(char)
            i += 1
        out["".join(key)] = "".join(value)
    return out
