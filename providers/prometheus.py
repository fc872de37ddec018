"""GPU telemetry pulled from Prometheus (the DCGM exporter's series) through the Prometheus HTTP API."""

from __future__ import annotations

import logging

from gpubot.domain.errors import Transient
from gpubot.domain.ports import GpuReading
from gpubot.providers.http import VendorHttp

__all__ = ["PrometheusTelemetry"]

log = logging.getLogger(__name__)

UTIL = "DCGM_FI_DEV_GPU_UTIL"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


class PrometheusTelemetry:
    """Reads utilisation and temperature per GPU for a host (the DCGM `Hostname` label)."""

    def __init__(self, base_url: str, **http_options) -> None:
        self._http = VendorHttp("prometheus", base_url, {}, **http_options)

    def readings(self, host: str) -> list[GpuReading]:
        """Newest readings of every GPU on `host`; [] when Prometheus has none."""
        util = self._query(UTIL, host) or {k: v * 100 for k, v in self._query(ENGINE_ACTIVE, host).items()}
        temp = self._query(TEMP, host)
        return [GpuReading(gpu, min(100.0, util[gpu]), temp[gpu]) for gpu in sorted(util) if gpu in temp]

    def _query(self, metric: str, host: str) -> dict[int, float]:
        quoted = host.replace("\\", "\\\\").replace('"', '\\"')
        response = self._http.request("GET", "api/v1/query", params={"query": f'{metric}{{Hostname="{quoted}"}}'})
        try:
            body = response.json()
        except ValueError:
            raise Transient("prometheus", "unreadable answer") from None
        if response.status_code != 200 or body.get("status") != "success":
            raise Transient("prometheus", f"{body.get('errorType', response.status_code)}: {body.get('error', '')}")
        return _by_gpu(body.get("data", {}).get("result", []))


def _by_gpu(result: list) -> dict[int, float]:
    values: dict[int, float] = {}
    for series in result:
        try:
            values[int(series["metric"]["gpu"])] = float(series["value"][1])
        except (KeyError, ValueError, IndexError, TypeError):
            log.debug("skipping a series without gpu label or value: %s", series)
    return values
