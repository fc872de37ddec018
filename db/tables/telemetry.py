"""GPU telemetry: the samples agents push and their rollups."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

__all__ = ["TelemetryRollupRow", "TelemetrySampleRow"]


class TelemetrySampleRow(SQLModel, table=True):
    """One GPU reading of a booking."""

    __tablename__ = "telemetry_samples"
    # One sample per booking, GPU and sample time (pushes are timed to the agent interval): a replayed or
    # flooded push stores nothing more.
    __table_args__ = (Index("ix_telemetry_booking_at", "booking_id", "at"), Index("ix_telemetry_at", "at"),
                      Index("uq_telemetry_sample", "booking_id", "gpu_index", "at", unique=True))

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id")
    gpu_index: int
    util: float | None = None  # unknown: a MIG-enabled GPU reports none
    temp_c: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    processes: int | None = None  # compute processes holding the GPU; unknown: an older agent, a failed query
    process_mem_mib: float | None = None
    at: datetime


class TelemetryRollupRow(SQLModel, table=True):
    """Samples older than the idle and health checks read, rolled up per booking, GPU and interval
    ([retention] telemetry_rollup, from the epoch); sums and counts, so a late sample merges exactly."""

    __tablename__ = "telemetry_rollups"
    __table_args__ = (Index("uq_telemetry_rollup", "booking_id", "gpu_index", "bucket", unique=True),
                      Index("ix_telemetry_rollup_bucket", "bucket"))

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id")
    gpu_index: int
    bucket: datetime  # the interval's start
    first_at: datetime  # its first and last sample
    last_at: datetime
    samples: int
    util_n: int = 0  # samples with a known utilisation (a MIG-enabled GPU reports none)
    util_sum: float = 0.0
    util_min: float | None = None
    util_max: float | None = None
    temp_max: float | None = None
    mem_n: int = 0
    mem_sum: float = 0.0  # of mem_used_mib
    processes_min: int | None = None  # unknown when no sample said
    processes_max: int | None = None
