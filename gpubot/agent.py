"""The telemetry agent: runs on the GPU machine, reads NVML, pushes readings to gpubot's /api/telemetry."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import httpx

from domain.ports import GpuReading

__all__ = ["NoGpu", "push_once", "read_nvml", "run_agent"]

log = logging.getLogger(__name__)


class NoGpu(RuntimeError):
    """This machine has no NVIDIA GPU (or no driver / no nvidia-ml-py)."""


def read_nvml() -> list[GpuReading]:
    """One reading per GPU from NVML (nvidia-ml-py)."""
    try:
        import pynvml as nv
    except ImportError:
        raise NoGpu("nvidia-ml-py is not installed: pip install 'gpubot[agent]'") from None
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise NoGpu(f"no NVIDIA driver or GPU found ({exc})") from None
    try:
        return [_reading(nv, i) for i in range(nv.nvmlDeviceGetCount())]
    finally:
        nv.nvmlShutdown()


def _reading(nv, index: int) -> GpuReading:
    handle = nv.nvmlDeviceGetHandleByIndex(index)
    util = nv.nvmlDeviceGetUtilizationRates(handle)
    memory = nv.nvmlDeviceGetMemoryInfo(handle)
    return GpuReading(index, float(util.gpu), float(nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)),
                      memory.used / 2**20, memory.total / 2**20)


def push_once(client: httpx.Client, url: str, token: str, readings: list[GpuReading]) -> int:
    """POST one batch; returns the HTTP status."""
    body = {"gpus": [{"index": r.index, "util": r.util, "temp_c": r.temp_c, "mem_used_mib": r.mem_used_mib,
                      "mem_total_mib": r.mem_total_mib} for r in readings]}
    response = client.post(f"{url.rstrip('/')}/api/telemetry", json=body,
                           headers={"Authorization": f"Bearer {token}"})
    return response.status_code


def run_agent(url: str, token: str, interval: float, read: Callable[[], list[GpuReading]] = read_nvml,
              rounds: int | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
    """Push readings every `interval` seconds; stops on 401 (the booking ended) or after `rounds`."""
    with httpx.Client(timeout=10) as client:
        done = 0
        while rounds is None or done < rounds:
            readings = read()
            try:
                status = push_once(client, url, token, readings)
            except httpx.HTTPError as exc:
                log.warning("push failed (%s); retrying next interval", type(exc).__name__)
                status = 0
            if status == 401:
                log.info("gpubot no longer accepts this token (booking ended); stopping")
                return
            done += 1
            sleep(interval)
