"""The Kubernetes gateway: the only package that talks to the API server.

Everything else in sparkplane works with plain dicts and goes through :class:`Kube`:
client configuration (``connect``), create / get / list / patch / apply / delete for any kind
(resolved through API discovery, so custom resources work like core kinds), watches that resume
from a resourceVersion, pod logs, and the mapping of API errors onto ``sparkplane.errors``.
"""

from sparkplane.kube.client import Kube, WatchEvent
from sparkplane.kube.config import connect
from sparkplane.kube.discovery import Resource

__all__ = ["Kube", "Resource", "WatchEvent", "connect"]
