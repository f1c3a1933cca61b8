"""A stand-in Spark UI for the dev cluster, where no Spark runs.

KWOK forwards every pod's port 4040 here (``ClusterPortForward``), so ``sparkplane ui`` and
port-forwarding can be exercised end to end. Run as ``python -m sparkplane_devcluster.fakeui PORT``.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = b"""<!doctype html><html><head><title>Spark UI (simulated)</title></head>
<body><h1>Spark UI</h1><p>Simulated by the sparkplane dev cluster: KWOK plays the kubelet and no
Spark process runs, so this page stands in for the driver's UI on port 4040.</p></body></html>
"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/api/v1/applications"):
            body = json.dumps([{"id": "simulated", "name": "simulated"}]).encode()
            ctype = "application/json"
        else:
            body, ctype = PAGE, "text/html"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def main() -> None:
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()


if __name__ == "__main__":
    main()
