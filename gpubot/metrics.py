"""Every Prometheus metric gpubot exports, declared in one place."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily

from db import bookings as repo
from domain.model import BookingState
from scheduling.engine import Engine

__all__ = ["Metrics"]


class _LedgerCollector:
    """Gauges read from the ledger at scrape time, so every replica reports the same truth."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self):
        with self.engine.db.session() as session:
            queued = repo.list_bookings(session=session, states=[BookingState.QUEUED, BookingState.REQUESTED,
                                                                 BookingState.ACQUIRING])
            active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
        yield GaugeMetricFamily("gpubot_queue_depth", "Bookings waiting for capacity", value=len(queued))
        yield GaugeMetricFamily("gpubot_bookings_active", "Bookings running now", value=len(active))


class Metrics:
    """The registry and the metrics the HTTP server and the bot record."""

    def __init__(self, engine: Engine) -> None:
        self.registry = CollectorRegistry()
        self.slack_ack_seconds = Histogram("gpubot_slack_ack_seconds", "Time from a Slack request to its ack",
                                           ["kind"], registry=self.registry,
                                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5))
        self.registry.register(_LedgerCollector(engine))
