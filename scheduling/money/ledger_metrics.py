"""Gauges read from the ledger at scrape time, so every replica reports the same truth."""

from __future__ import annotations

from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import BookingState
from gpubot.domain.telemetry import latest_per_gpu
from gpubot.scheduling.engine import Engine
from prometheus_client.core import GaugeMetricFamily

__all__ = ["LedgerCollector"]


class LedgerCollector:
    """Queue depth, active and booting bookings, and the newest fresh GPU readings of each active booking."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self):
        """Yield the gauge families (called by prometheus_client at scrape)."""
        with self.engine.db.session() as session:
            waiting = repo.list_bookings(session=session, states=[BookingState.QUEUED, BookingState.REQUESTED,
                                                                  BookingState.ACQUIRING])
            active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
            booting = repo.list_bookings(session=session, states=[BookingState.BOOTING])
            since = self.engine.now() - self.engine.policy.health.telemetry_stale_after
            recent = telemetry_repo.samples_of([b.id for b in active], since, session=session)
        latest = {booking_id: latest_per_gpu(samples) for booking_id, samples in recent.items()}
        yield GaugeMetricFamily("gpubot_queue_depth", "Bookings waiting for capacity", value=len(waiting))
        yield GaugeMetricFamily("gpubot_bookings_active", "Bookings running now", value=len(active))
        yield GaugeMetricFamily("gpubot_bookings_booting", "Bookings launched whose machine is not reachable yet",
                                value=len(booting))
        util = GaugeMetricFamily("gpubot_gpu_utilization_percent", "Newest GPU utilisation per booked GPU",
                                 labels=["booking", "gpu"])
        temp = GaugeMetricFamily("gpubot_gpu_temperature_celsius", "Newest GPU temperature per booked GPU",
                                 labels=["booking", "gpu"])
        for booking_id, samples in latest.items():
            for sample in samples:
                if sample.util is not None:  # a MIG-enabled GPU reports none: no series rather than a made-up 0
                    util.add_metric([str(booking_id), str(sample.gpu_index)], sample.util)
                if sample.temp_c is not None:
                    temp.add_metric([str(booking_id), str(sample.gpu_index)], sample.temp_c)
        yield util
        yield temp
