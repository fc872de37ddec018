"""P7: what one `/gpu book` that lands at once costs the ledger, and what delivering one of its notices costs:
transactions (SQLAlchemy `begin` events) and SQL statements (`before_cursor_execute`), counted on SQLite and, when
it answers, PostgreSQL. The engine call is `scheduling.desk.request.request` (the whole of `/gpu book`) on a
simulated cloud that answers at once; delivery is the outbox worker (`deliver_due`) handing every notice the
booking owed (its message, its progress, its ready DM) to a channel that accepts them. Floors: issue 26's goals
(≤ 4 transactions and ≤ 15 statements for the booking, ≤ 1 transaction per notice)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

from gpubot.domain.notices import Audience
from gpubot.domain.ports import Delivery
from gpubot.scheduling.booking.booking import BookingAsk
from gpubot.scheduling.delivery import deliver_due
from gpubot.scheduling.desk.request import request
from sqlalchemy import create_engine, event, text

from bench.engines import bench_engine, bench_policy
from bench.figures import Figure

__all__ = ["count", "run"]

PG_URL = os.environ.get("GPUBOT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
GOALS = {"book transactions": 4, "book statements": 15, "transactions per notice": 1}


class _Accepting:
    """A channel that takes every notice (a new booking message: posted, as Slack answers)."""

    def __init__(self) -> None:
        self.delivered = 0

    def deliver(self, notice, in_doubt: bool = False, **_view) -> Delivery:
        """Accept; a new booking message is posted at a made-up place."""
        self.delivered += 1
        if notice.audience is Audience.NEW_BOOKING_MESSAGE:
            try:
                return Delivery("accepted", posted=("CGPU", f"1.{self.delivered}"))
            except TypeError:  # a Delivery without `posted` (before issue 26): the channel recorded it itself
                pass
        return Delivery("accepted")


def _counting(sql_engine) -> Counter:
    counts: Counter = Counter()
    event.listen(sql_engine, "begin", lambda _conn: counts.update(["transactions"]))
    event.listen(sql_engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_a: counts.update(["statements", statement.split()[0].upper()]))
    return counts


def count(url: str) -> dict[str, float]:
    """Transactions and statements of one `/gpu book` (the second: the first warms caches) and per notice."""
    engine = bench_engine(url, bench_policy({"sim": {"kind": "simulated", "stock": [
        {"gpu": "a100", "region": "sim-1", "count": 64, "price": 2.0}]}}))
    channel = _Accepting()
    channels = {"slack": channel}
    counts = _counting(engine.db.engine)
    try:
        for owner in ("UWARM", "UBENCH"):
            counts.clear()
            booked = request(engine, BookingAsk(owner=owner, gpu="a100", count=4, duration=timedelta(hours=6),
                                                channel="CGPU"))
            book = Counter(counts)
            counts.clear()
            before = channel.delivered
            while True:  # the worker's turns until nothing is due; its idle poll after them is not counted
                turns_so_far = Counter(counts)
                if not deliver_due(engine, channels):
                    counts.clear()
                    counts.update(turns_so_far)
                    break
            notices = channel.delivered - before
        assert booked.booking.state.value == "active", booked.booking.state
        return {"book transactions": book["transactions"], "book statements": book["statements"],
                "book selects": book["SELECT"], "book inserts": book["INSERT"], "book updates": book["UPDATE"],
                "notices": notices, "transactions per notice": counts["transactions"] / max(1, notices),
                "statements per notice": counts["statements"] / max(1, notices)}
    finally:
        engine.db.dispose()


def _on_postgres() -> dict[str, float] | None:
    """The counts on a fresh schema of the test PostgreSQL (dropped after), or None when it does not answer."""
    try:
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
        schema = f"bench_p7_{uuid.uuid4().hex[:8]}"
        with admin.connect() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
    except Exception:
        return None
    try:
        return count(f"{PG_URL}?options=-csearch_path%3D{schema}")
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def _figures(database: str, measured: dict[str, float]) -> list[Figure]:
    note = (f"{measured['book selects']:.0f} SELECT, {measured['book inserts']:.0f} INSERT, "
            f"{measured['book updates']:.0f} UPDATE; {measured['notices']:.0f} notices, "
            f"{measured['statements per notice']:.1f} statements each")
    return [Figure(f"P7 /gpu book transactions ({database})", measured["book transactions"],
                   GOALS["book transactions"], "tx", 1.0, note),
            Figure(f"P7 /gpu book statements ({database})", measured["book statements"], GOALS["book statements"],
                   "stmts", 1.0),
            Figure(f"P7 transactions per notice ({database})", measured["transactions per notice"],
                   GOALS["transactions per notice"], "tx", 1.0)]


def run(size: str = "full") -> list[Figure]:
    """The figures on SQLite, and on PostgreSQL when it answers (the counts do not depend on `size`)."""
    with tempfile.TemporaryDirectory(prefix="gpubot-p7-") as directory:
        figures = _figures("SQLite", count(f"sqlite:///{Path(directory) / 'p7.db'}"))
    measured = _on_postgres()
    if measured:
        figures += _figures("PostgreSQL", measured)
    return figures


if __name__ == "__main__":
    for name, url in (("sqlite", "sqlite:////tmp/gpubot-p7-manual.db"),):
        Path("/tmp/gpubot-p7-manual.db").unlink(missing_ok=True)
        print(name, count(url))
