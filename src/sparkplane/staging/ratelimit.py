"""Per-client limit on failed secret attempts (brute-force brake for downloads).

Used by the staging server: every failed download authentication is recorded against the
client address; once a client has ``max_failures`` failures inside ``window`` seconds it is
refused (HTTP 429) until the oldest failure ages out. Pure: the clock is a parameter, no I/O.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class FailureLimiter:
    """Sliding-window failure counter per client key, bounded in memory."""

    max_failures: int = 10
    window: float = 60.0
    max_clients: int = 10_000
    _failures: dict[str, deque[float]] = field(default_factory=dict, repr=False)

    def retry_after(self, client: str, now: float) -> float:
        """Seconds until ``client`` may try again; 0 when it is not blocked."""
        times = self._prune(client, now)
        if len(times) < self.max_failures:
            return 0.0
        return max(0.0, times[0] + self.window - now)

    def record_failure(self, client: str, now: float) -> None:
        """Count one failed attempt by ``client`` at ``now``."""
        if client not in self._failures and len(self._failures) >= self.max_clients:
            self._evict(now)
        times = self._failures.setdefault(client, deque())
        times.append(now)
        while len(times) > self.max_failures:
            times.popleft()

    def _prune(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[client]
        return times

    def _evict(self, now: float) -> None:
        """Drop expired clients; if still full, drop the client whose last failure is oldest."""
        for client in list(self._failures):
            self._prune(client, now)
        if len(self._failures) >= self.max_clients:
            oldest = min(self._failures, key=lambda c: self._failures[c][-1])
            del self._failures[oldest]
