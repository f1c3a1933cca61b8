"""Prometheus metrics of the operator: apps per state, time between states, reconciles.

Owns one registry per operator (so tests can run several operators in one process) with:

* ``sparkplane_operator_applications{state}`` - SparkApplications per current state, read from
  the informer caches at scrape time (never stale, never double counted);
* ``sparkplane_operator_clusters{state}`` - the same for SparkClusters;
* ``sparkplane_operator_state_seconds{from_state,to_state}`` - time spent in a state before a
  transition (histogram);
* ``sparkplane_operator_transitions_total{to_state}``;
* ``sparkplane_operator_reconcile_seconds{kind}`` and
  ``sparkplane_operator_reconcile_errors_total{kind,error}``.

Called by the runner; :meth:`OperatorMetrics.serve` starts the HTTP endpoint.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sparkplane.operator.core.decision import Transition

_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


class _StateCollector(Collector):
    def __init__(self, name: str, doc: str, source: Callable[[], Iterable[dict[str, Any]]]) -> None:
        self.name, self.doc, self.source = name, doc, source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.doc, labels=["state"])
        tally: Tally[str] = Tally()
        for obj in self.source():
            current = ((obj.get("status") or {}).get("currentState") or {}).get(
                "currentStateSummary"
            )
            tally[str(current or "Unknown")] += 1
        for state, count in sorted(tally.items()):
            family.add_metric([state], count)
        yield family


CAPACITY_GAUGES = {
    "limit": "The adaptive limit on drivers not yet scheduled (backpressure).",
    "in_flight": "Drivers created and not yet scheduled (or not yet seen).",
    "held": "SparkApplications waiting for capacity before their driver is created.",
    "watch_lag_seconds": "Mean time the operator's status writes take to come back through its"
    " watch (the API server's delivery lag).",
}


class _CapacityCollector(Collector):
    def __init__(self, source: Callable[[], dict[str, float]]) -> None:
        self.source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        values = self.source()
        for name, doc in CAPACITY_GAUGES.items():
            yield GaugeMetricFamily(f"sparkplane_operator_capacity_{name}", doc, values[name])


class OperatorMetrics:
    """The operator's metrics in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.state_seconds = Histogram(
            "sparkplane_operator_state_seconds",
            "Seconds an application spent in a state before leaving it.",
            ["from_state", "to_state"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.transitions = Counter(
            "sparkplane_operator_transitions_total",
            "State transitions written.",
            ["to_state"],
            registry=self.registry,
        )
        self.reconcile_seconds = Histogram(
            "sparkplane_operator_reconcile_seconds",
            "Duration of one reconcile.",
            ["kind"],
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            "sparkplane_operator_reconcile_errors_total",
            "Reconciles that failed and were requeued.",
            ["kind", "error"],
            registry=self.registry,
        )
        self._server: Any = None
        self.port: int | None = None  # the bound port once serving

    def watch_states(
        self, kind: str, source: Callable[[], Iterable[dict[str, Any]]]
    ) -> OperatorMetrics:
        """Export ``sparkplane_operator_<kind>{state}`` from ``source`` (a cache reader)."""
        name = f"sparkplane_operator_{kind}"
        self.registry.register(_StateCollector(name, f"Number of {kind} per state.", source))
        return self

    def watch_capacity(self, source: Callable[[], dict[str, float]]) -> OperatorMetrics:
        """Export the backpressure's ``sparkplane_operator_capacity_<name>`` gauges from
        ``source`` (``limit``, ``in_flight``, ``held``: :class:`.capacity.CapacityGate`)."""
        self.registry.register(_CapacityCollector(source))
        return self

    def observe(self, transition: Transition) -> None:
        self.transitions.labels(str(transition.dst)).inc()
        if transition.src is not None and transition.seconds is not None:
            self.state_seconds.labels(str(transition.src), str(transition.dst)).observe(
                transition.seconds
            )

    def serve(self, port: int, addr: str = "0.0.0.0") -> int:
        """Start the /metrics endpoint; returns the bound port (0 picks a free one)."""
        server, _ = start_http_server(port, addr=addr, registry=self.registry)
        self._server = server
        self.port = int(server.server_port)
        return self.port

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
