"""The usage ledger read over a window (db/ledger_window.py): the stretches added since an id, found by id."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db import ledger, ledger_window
from sqlalchemy import event

from tests.engine_kit import T0, a_booking, migrated


def test_rows_added_since_an_id_come_in_time_order_found_by_id(tmp_path):
    db = migrated(f"sqlite:///{tmp_path / 'x.db'}")
    with db.session() as session:
        booking = repo.add_booking(a_booking(), session=session)
    running = booking.with_(provider="sim", price_per_gpu_hour=Decimal("2.42"), currency="USD", started_at=T0)
    hours = [3, 1, 0, 2]  # appended out of time order
    with db.session() as session:
        for n, hour in enumerate(hours):
            ledger.append_interval(running.with_(instance_name=f"i-{n}"), T0 + timedelta(hours=hour),
                                   T0 + timedelta(hours=hour, minutes=30), session=session)
    seen: list[tuple[str, tuple]] = []
    event.listen(db.engine, "before_cursor_execute", lambda _c, _cur, sql, params, _ctx, _many:
                 seen.append((sql, params)))
    with db.session() as session:
        rows = ledger_window.ledger_rows(session=session, since=T0, until=T0 + timedelta(days=1), after_id=1)
    assert [r.start for r in rows] == [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2)]
    sql, params = next((sql, params) for sql, params in seen if "FROM usage_intervals" in sql)
    with db.engine.connect() as conn:  # a walk of the start index would read every older stretch of the ledger
        plan = " ".join(str(row) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
    assert "PRIMARY KEY" in plan and "ix_usage_start" not in plan, plan


def test_rows_added_after_an_id_come_with_the_count_below_it_on_postgresql(database_url):
    db = migrated(database_url)
    with db.session() as session:
        booking = repo.add_booking(a_booking(), session=session)
    running = booking.with_(provider="sim", price_per_gpu_hour=Decimal("2.42"), currency="USD", started_at=T0)
    since, until = T0 + timedelta(days=1), T0 + timedelta(days=2)
    stretches = [(-30, 31), (0, 1), (-25, 1), (3, 1), (-50, 1), (30, 1)]  # (hours from `since`, hours long)
    with db.session() as session:  # ids 1…6: 1 and 2 overlap the window, 3 and 5 end before it, 6 starts after it
        for n, (hour, length) in enumerate(stretches):
            start = since + timedelta(hours=hour)
            ledger.append_interval(running.with_(instance_name=f"i-{n}"), start, start + timedelta(hours=length),
                                   session=session)
    with db.session() as session:
        added = ledger_window.rows_added(session=session, since=since, until=until, after_id=3)
        none_added = ledger_window.rows_added(session=session, since=since, until=until, after_id=6)
    assert [r.id for r in added.rows] == [4] and none_added.rows == []
    # 1 started 30 h before the window and still crosses into it: the longest stretch bounds the count's reach
    assert (added.settled, none_added.settled) == ((2, 3) if db.is_postgres else (None, None))
