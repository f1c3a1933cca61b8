"""The gateway's HTTP side: a client ``Configuration`` and the REST client, without ``ApiClient``.

The official ``ApiClient`` is built for its generated API classes: it serialises pydantic
models and parses dates, so importing it loads pydantic (and its plugin scan of every
installed distribution), python-dateutil and a thread pool - about 50 ms of every command's
start, for nothing the gateway uses: sparkplane sends JSON documents and reads JSON back
(:class:`~sparkplane.kube.client.Kube`). :class:`Transport` keeps what matters from the
library - ``Configuration`` (TLS, proxies, the bearer token and its refresh hook for exec
plugins and rotated service-account tokens) and ``rest.RESTClientObject`` (the urllib3 pool,
timeouts, keep-alive) - and builds the request line itself, as ``ApiClient.param_serialize``
does: ``host + path``, query values with booleans lower-cased and everything percent-quoted,
the ``BearerToken`` auth setting as a header.

:meth:`Transport.api_client` makes a real ``ApiClient`` on the same configuration for the one
caller that needs the generated classes (port-forwarding over a websocket). Built by
:func:`sparkplane.kube.config.connect`; used only by the gateway.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kubernetes.client import Configuration, rest

from sparkplane.version import __version__

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

USER_AGENT = f"sparkplane/{__version__}"


class Transport:
    """One configuration, one connection pool; :meth:`request` sends a JSON request."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration
        self.rest = rest.RESTClientObject(configuration)

    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        """``host + path`` and the query string (None values left out)."""
        pairs = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        url = f"{self.configuration.host}{path}"
        if pairs:
            url += "?" + "&".join(f"{k}={quote(v)}" for k, v in pairs)
        return url

    def headers(self, extra: Mapping[str, str]) -> dict[str, str]:
        """The request's headers: ours, then the bearer token (refreshed by its hook)."""
        headers = {"User-Agent": USER_AGENT, **extra}
        auth = self.configuration.auth_settings().get("BearerToken")
        if auth and auth.get("value"):
            headers[str(auth["key"])] = str(auth["value"])
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str],
        body: Any = None,
        timeout: float | tuple[float, float | None] | None = None,
    ) -> rest.RESTResponse:
        """Send one request; the response is not read yet (``read()`` or ``.response``)."""
        response: rest.RESTResponse = self.rest.request(
            method,
            self.url(path, query),
            headers=self.headers(headers),
            body=body,
            _request_timeout=timeout,
        )
        return response

    def fit(self, concurrency: int) -> None:
        """Keep up to ``concurrency`` connections (the operator's request threads): a smaller
        pool discards each surplus connection after its request, and every new one costs both
        sides a TLS handshake."""
        if concurrency > (self.configuration.connection_pool_maxsize or 0):
            self.configuration.connection_pool_maxsize = concurrency
            old, self.rest = self.rest, rest.RESTClientObject(self.configuration)
            old.pool_manager.clear()

    def api_client(self) -> ApiClient:
        """A generated-API client on the same configuration (port-forwarding needs one)."""
        from kubernetes.client import ApiClient

        return ApiClient(self.configuration)

    def close(self) -> None:
        """Close the pooled connections."""
        self.rest.pool_manager.clear()


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)
