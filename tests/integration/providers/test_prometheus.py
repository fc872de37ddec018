"""Telemetry from Prometheus' HTTP API (DCGM exporter series), against a fake Prometheus on 127.0.0.1."""

from __future__ import annotations

import pytest
from gpubot.domain.errors import Transient
from gpubot.providers.prometheus import PrometheusTelemetry

from tests.fakes.server import FakeVendor, Request


class FakePrometheus(FakeVendor):
    """Answers instant queries from a table of series, in the documented envelope."""

    def __init__(self) -> None:
        super().__init__()
        self.series: dict[str, list[dict]] = {}
        self.route("GET", "/api/v1/query", self._query)

    def _query(self, request: Request) -> tuple:
        query = request.query.get("query", [""])[0]
        metric = query.split("{", 1)[0]
        if not metric:
            return 400, {"status": "error", "errorType": "bad_data", "error": "empty query"}
        host = query.split('Hostname="', 1)[1].rstrip('"}') if "Hostname" in query else ""
        result = [{"metric": {"__name__": metric, "Hostname": host, **s["labels"]},
                   "value": [1764400000.0, str(s["value"])]}
                  for s in self.series.get(metric, []) if s["host"] == host]
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}

    def add(self, metric: str, host: str, gpu: int, value: float) -> None:
        self.series.setdefault(metric, []).append({"host": host, "labels": {"gpu": str(gpu)}, "value": value})


@pytest.fixture
def prometheus():
    fake = FakePrometheus()
    fake.start()
    yield fake
    fake.stop()


def test_util_and_temperature_per_gpu_of_a_host(prometheus):
    for gpu, (util, temp) in enumerate([(37, 71), (0, 45)]):
        prometheus.add("DCGM_FI_DEV_GPU_UTIL", "gpubot-3-ab", gpu, util)
        prometheus.add("DCGM_FI_DEV_GPU_TEMP", "gpubot-3-ab", gpu, temp)
    prometheus.add("DCGM_FI_DEV_GPU_UTIL", "other-host", 0, 99)
    readings = PrometheusTelemetry(prometheus.url).readings("gpubot-3-ab")
    assert [(r.index, r.util, r.temp_c) for r in readings] == [(0, 37.0, 71.0), (1, 0.0, 45.0)]


def test_engine_active_ratio_when_util_is_absent(prometheus):
    prometheus.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "h", 0, 0.42)
    prometheus.add("DCGM_FI_DEV_GPU_TEMP", "h", 0, 60)
    assert PrometheusTelemetry(prometheus.url).readings("h")[0].util == pytest.approx(42.0)


def test_no_series_means_no_readings(prometheus):
    assert PrometheusTelemetry(prometheus.url).readings("nobody") == []


def test_errors_and_garbage_are_transient(prometheus):
    prometheus.inject("malformed")
    with pytest.raises(Transient):
        PrometheusTelemetry(prometheus.url, sleep=lambda _s: None).readings("h")
    prometheus.inject("status", status=503, times=3)
    with pytest.raises(Transient):
        PrometheusTelemetry(prometheus.url, sleep=lambda _s: None).readings("h")
