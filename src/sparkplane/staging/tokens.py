"""Resource ids and secrets: minting, hashing at rest, constant-time verification.

Called by the staging server (upload mints, download verifies) and by the metadata store.
Pure: no I/O, no clock. Secrets are 256-bit random tokens, so a salted PBKDF2 is defence in
depth (a stolen database must not hand out working secrets), not a password-strength measure.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

SCHEME = "pbkdf2_sha256"
DEFAULT_ITERATIONS = 50_000
_ID_RE = re.compile(r"^[0-9a-f]{32}$")


def new_resource_id() -> str:
    """A fresh opaque resource id (128 random bits, hex)."""
    return secrets.token_hex(16)


def is_resource_id(value: str) -> bool:
    """Whether ``value`` has the shape of an id minted by :func:`new_resource_id`."""
    return bool(_ID_RE.match(value))


def new_secret() -> str:
    """A fresh resource secret (256 random bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


def hash_secret(secret: str, *, iterations: int = DEFAULT_ITERATIONS) -> str:
    """Salted PBKDF2-SHA256 of ``secret`` as ``scheme$iterations$salt$digest`` (hex)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, iterations)
    return f"{SCHEME}${iterations}${salt.hex()}${digest.hex()}"


def verify_secret(secret: str, stored: str) -> bool:
    """Whether ``secret`` matches a hash from :func:`hash_secret`; constant time in the digest."""
    try:
        scheme, iterations_text, salt_hex, digest_hex = stored.split("$")
        iterations = int(iterations_text)
        salt = bytes.fromhex(salt_hex)
        expected = bytes.fromhex(digest_hex)
    except ValueError:
        return False
    if scheme != SCHEME or iterations <= 0:
        return False
    actual = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, iterations)
    return hmac.compare_digest(actual, expected)
