"""The ledger's disk guard (gpubot.push_limit.DiskGuard): under `retention.min_free_disk_mb` free it names the
problem (for /readyz), refuses telemetry 503 disk_low and raises `gpubot_ledger_disk_low`; a PostgreSQL ledger's
disk is not seen from here."""

from __future__ import annotations

from collections import namedtuple

import pytest
from gpubot.domain.telemetry import TelemetryRejected
from gpubot.scheduling.metrics import REGISTRY

from gpubot.push_limit import DiskGuard

Usage = namedtuple("Usage", "total used free")
MB = 2**20


def _guard(free_mb: list[int], minimum: int = 1024) -> DiskGuard:
    clock = iter(range(0, 1000, 10))  # every look is 10 s after the last: past `every`, so the disk is read again
    return DiskGuard("sqlite:////var/lib/gpubot/ledger.db", lambda: minimum,
                     usage=lambda _folder: Usage(0, 0, free_mb.pop(0) * MB), clock=lambda: next(clock))


def _low() -> float | None:
    return REGISTRY.get_sample_value("gpubot_ledger_disk_low")


def test_under_the_minimum_it_says_why_refuses_telemetry_and_raises_the_metric():
    guard = _guard([900, 900, 2048])
    assert guard.problem() == ("the ledger's disk has 900 MB free (under retention.min_free_disk_mb = 1024 MB): "
                               "telemetry is refused so bookings and billing keep the room") and _low() == 1
    with pytest.raises(TelemetryRejected) as refused:
        guard.check()
    assert (refused.value.status, refused.value.reason, refused.value.retry_after) == (503, "disk_low", 60)
    assert guard.problem() is None and _low() == 0  # space freed: ready again, telemetry taken
    assert REGISTRY.get_sample_value("gpubot_ledger_disk_free_bytes") == 2048 * MB


def test_a_postgresql_ledger_has_no_disk_here():
    guard = DiskGuard("postgresql+psycopg://gpubot@db/gpubot", lambda: 10**9)
    assert guard.folder is None and guard.problem() is None
    guard.check()


def test_a_uri_filename_is_its_folder_and_an_unreadable_folder_is_unknown_not_a_failure(tmp_path):
    assert DiskGuard(f"sqlite:///file:{tmp_path}/ledger.db?mode=ro&uri=true", lambda: 1).folder == tmp_path

    def unreadable(_folder):
        raise PermissionError("denied")

    guard = DiskGuard("sqlite:////gone/ledger.db", lambda: 10**9, usage=unreadable)
    assert guard.free_bytes() is None and guard.problem() is None
