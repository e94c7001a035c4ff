"""`GET /metrics` in Prometheus text format (prometheus_client), one registry per server.

Counted as requests are served: requests by endpoint and outcome, synthesis seconds and first
audio of HTTP speech, cache hits and misses of HTTP speech. Read when scraped: the phrase
cache's own totals, the announcement queue, open HTTP synthesis streams, the process's RSS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..daemon.state import State
from ..memory import rss_mb

_FIRST_AUDIO_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4)


class Metrics:
    def __init__(self, state: Callable[[], State], open_streams: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("edged_http_requests", "HTTP requests by endpoint and outcome",
                                ["endpoint", "outcome"], registry=self.registry)
        self.synthesis = Histogram("edged_http_synthesis_seconds",
                                   "Inference time spent on one HTTP speech request",
                                   registry=self.registry)
        self.first_audio = Histogram("edged_http_first_audio_seconds",
                                     "From an HTTP speech request to its first audio ready",
                                     buckets=_FIRST_AUDIO_BUCKETS, registry=self.registry)
        self.cache = Counter("edged_http_cache", "HTTP speech answered from the phrase cache "
                             "(hit) or synthesized (miss)", ["result"], registry=self.registry)
        self.registry.register(_Live(state, open_streams))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Live(Collector):
    """Figures read when scraped."""

    def __init__(self, state: Callable[[], State], open_streams: Callable[[], int]) -> None:
        self._state = state
        self._open_streams = open_streams

    def describe(self) -> list[Metric]:
        return []  # unchecked names: collect() is only called when scraped

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        cache = state.cache
        hits = cache.get("hits") or {}
        yield _gauge("edged_queue_depth", "Announcements waiting for the loudspeaker",
                     state.queue)
        yield _gauge("edged_http_streams_open", "HTTP synthesis streams running now",
                     self._open_streams())
        yield _gauge("edged_cache_hits", "Phrase cache hits since start (all sources)",
                     sum(v for v in hits.values() if isinstance(v, int)))
        yield _gauge("edged_cache_misses", "Phrase cache misses since start (all sources)",
                     cache.get("misses", 0))
        yield _gauge("edged_cache_bytes", "Phrase cache size on disk", cache.get("bytes", 0))
        yield _gauge("edged_rss_bytes", "Resident memory of the daemon", rss_mb() * 1e6)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=float(value))
