"""Telemetry rules: validating pushed GPU readings, and deciding idleness and overheating from samples."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpubot.domain.ports import GpuReading

__all__ = ["Sample", "TelemetryRejected", "decode_batch", "deeper_than", "hot_gpus", "idle_since", "latest_per_gpu",
           "parse_readings"]

MAX_GPUS = 64
MAX_DEPTH = 8  # a batch is {"gpus": [{...}]}: three levels


class TelemetryRejected(ValueError):
    """A pushed batch was refused; `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Sample:
    """One stored GPU reading."""

    gpu_index: int
    util: float
    temp_c: float
    at: datetime


def _number(gpu: dict, key: str, low: float, high: float, required: bool = True) -> float | None:
    value = gpu.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TelemetryRejected(400, f"gpus[].{key} must be a number")
    if not low <= value <= high:
        raise TelemetryRejected(422, f"gpus[].{key}={value} is out of range ({low:g}..{high:g})")
    return float(value)


def decode_batch(body: bytes) -> object:
    """The JSON document of a pushed batch, or TelemetryRejected(400)."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise TelemetryRejected(400, "malformed JSON") from None
    except RecursionError:
        raise TelemetryRejected(400, f"JSON nested more than {MAX_DEPTH} levels") from None
    if deeper_than(document, MAX_DEPTH):
        raise TelemetryRejected(400, f"JSON nested more than {MAX_DEPTH} levels")
    return document


def deeper_than(document: object, limit: int) -> bool:
    """True when lists and objects nest more than `limit` levels (checked without recursion)."""
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False


def parse_readings(payload: object) -> list[GpuReading]:
    """Readings from a pushed `{"gpus": [{"index", "util", "temp_c", ...}]}` body, or TelemetryRejected."""
    if not isinstance(payload, dict) or not isinstance(payload.get("gpus"), list) or not payload["gpus"]:
        raise TelemetryRejected(400, 'expected {"gpus": [{"index": 0, "util": 37, "temp_c": 71}, ...]}')
    if len(payload["gpus"]) > MAX_GPUS:
        raise TelemetryRejected(422, f"at most {MAX_GPUS} GPUs per batch")
    readings = []
    for gpu in payload["gpus"]:
        if not isinstance(gpu, dict):
            raise TelemetryRejected(400, "each entry of gpus must be an object")
        index = _number(gpu, "index", 0, MAX_GPUS - 1)
        readings.append(GpuReading(int(index), _number(gpu, "util", 0, 100), _number(gpu, "temp_c", -20, 150),
                                   _number(gpu, "mem_used_mib", 0, 10**7, False),
                                   _number(gpu, "mem_total_mib", 0, 10**7, False)))
    return readings


def idle_since(samples: Sequence[Sample], below: float, window: timedelta, now: datetime,
               known_start: datetime | None = None) -> datetime | None:
    """When the current idle stretch began, if every GPU has stayed below `below` for at least `window`.

    The stretch starts at the first sample of the trailing run in which every reading is below the threshold;
    it counts only once that run covers `window`. `known_start` is where an earlier check saw this stretch
    begin: when every given sample is below the threshold, the stretch is still that one (the samples
    before them were checked back then), so callers need only fetch recent samples.
    """
    start = None
    ordered = sorted(samples, key=lambda s: s.at)
    for sample in ordered:
        if sample.util >= below:
            start = None
        elif start is None:
            start = sample.at
    if start is not None and known_start is not None and ordered and start == ordered[0].at:
        start = min(start, known_start)
    if start is None or now - start < window:
        return None
    return start


def hot_gpus(latest: Sequence[Sample], max_temp_c: float) -> list[Sample]:
    """The GPUs whose latest reading is above the limit."""
    return [s for s in latest if s.temp_c > max_temp_c]


def latest_per_gpu(samples: Sequence[Sample]) -> list[Sample]:
    """The newest sample of each GPU, by GPU index."""
    latest: dict[int, Sample] = {}
    for sample in samples:
        if sample.gpu_index not in latest or sample.at >= latest[sample.gpu_index].at:
            latest[sample.gpu_index] = sample
    return [latest[i] for i in sorted(latest)]
