"""A Spark Connect client from outside the cluster, as its own process (run by
``test_sessions.py``): argv ``URL_WITH_TOKEN URL_WITHOUT_TOKEN PLAINTEXT_URL``; the CA it
trusts comes from ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` (gRPC reads it for every TLS channel).
Prints one JSON object: what each URL answered (``count``, or the error on one line)."""

from __future__ import annotations

import json
import sys


def attempt(url: str) -> dict[str, object]:
    from pyspark.sql.connect.session import SparkSession

    try:
        spark = SparkSession.builder.remote(url).create()
        spark.client.set_retry_policies([])  # a refused connection is not retried for minutes
        return {"count": spark.range(10).count()}
    except Exception as exc:  # what the client saw is the result
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:600]}"}


if __name__ == "__main__":
    keys = ("with_token", "without_token", "plaintext")
    print(json.dumps({k: attempt(u) for k, u in zip(keys, sys.argv[1:4], strict=True)}))
