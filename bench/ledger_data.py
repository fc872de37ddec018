"""A generated year of usage for P3: bookings and their closed 10-minute stretches, inserted in bulk
(SQLAlchemy Core executemany), not through the engine."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.db.tables.bookings import BookingRow
from sqlalchemy import Engine as SqlEngine

__all__ = ["PROVIDERS", "YEAR_START", "generate"]

YEAR_START = datetime(2026, 1, 1, tzinfo=UTC)
STRETCH = timedelta(minutes=10)
PROVIDERS = {"a": 1.50, "b": 1.80, "c": 2.10, "d": 2.40}  # provider b has a discount tier (see p3_ledger)


def _booking(i: int, rng: random.Random, users: int, projects: int, stretches: int) -> tuple[dict, list[dict]]:
    provider = rng.choice(sorted(PROVIDERS))
    start = YEAR_START + timedelta(seconds=rng.randrange(0, 347 * 86400))
    count, price = rng.choice((1, 1, 2, 4, 8)), PROVIDERS[provider]
    n = rng.randint(1, 2 * stretches - 1)
    end = start + n * STRETCH
    name = f"gpubot-{i}-bench"
    booking = {"id": i, "owner": f"U{rng.randrange(users):03d}", "project": f"p{rng.randrange(projects):02d}",
               "gpu": "a100", "count": count, "duration_s": int((end - start).total_seconds()), "state": "released",
               "spot": False, "provider": provider, "region": f"{provider}-1", "instance_id": f"i-{i}",
               "instance_name": name, "price_per_gpu_hour": price, "currency": "USD", "requested_at": start,
               "started_at": start, "ends_at": end, "released_at": end, "attempt_rounds": 0}
    usage = [{"booking_id": i, "instance_name": name, "owner": booking["owner"], "project": booking["project"],
              "provider": provider, "gpu": "a100", "count": count, "start": start + k * STRETCH,
              "end": start + (k + 1) * STRETCH,
              "seconds": int(STRETCH.total_seconds()), "offset_s": k * int(STRETCH.total_seconds()),
              "price_per_gpu_hour": price, "currency": "USD", "spot": False}
             for k in range(n)]
    return booking, usage


def generate(engine: SqlEngine, bookings: int, users: int, projects: int, stretches: int = 50,
             seed: int = 8) -> int:
    """Insert `bookings` bookings of about `stretches` stretches each; returns the number of stretches."""
    rng = random.Random(seed)
    total, booking_rows, usage_rows = 0, [], []
    with engine.begin() as conn:
        for i in range(1, bookings + 1):
            booking, usage = _booking(i, rng, users, projects, stretches)
            booking_rows.append(booking)
            usage_rows += usage
            if len(usage_rows) >= 50_000 or i == bookings:
                conn.execute(BookingRow.__table__.insert(), booking_rows)
                conn.execute(UsageIntervalRow.__table__.insert(), usage_rows)
                total += len(usage_rows)
                booking_rows, usage_rows = [], []
    return total


def now() -> datetime:
    """The benchmark's "now": mid-December of the generated year."""
    return datetime(2026, 12, 14, 12, 0, tzinfo=UTC)
