"""Object identity for messages and owner references: :mod:`sparkplane.vocab`'s, re-exported.

The words are declared once, in :mod:`sparkplane.vocab` (below every layer, so the pure core
uses the same functions); these names stay importable from the gateway for its callers.
"""

from __future__ import annotations

from sparkplane.vocab import describe, owner_reference

__all__ = ["describe", "owner_reference"]
