"""Money over the real ledger (SQLite and PostgreSQL): reports, budget thresholds, the digest and its chart."""

from __future__ import annotations

import io
import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.domain.errors import Refused
from gpubot.domain.model import BookingState, Instance
from gpubot.domain.money import CENT
from gpubot.scheduling.acquisition.queue import start_now
from gpubot.scheduling.booking.booking import BookingAsk, book, release
from gpubot.scheduling.lifecycle.cost_check import compare
from gpubot.scheduling.money.billing import accrue
from gpubot.scheduling.money.budget_alerts import check_budgets
from gpubot.scheduling.money.digest import build_digest, day_bounds, run_digest, send_digest
from gpubot.scheduling.money.reports import budget_statuses, cost_report
from sqlmodel import select

from tests.engine_kit import deliver, make_engine, simulated_policy

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _policy(**budget):
    return simulated_policy(team={"digest_channel": "CDIGEST", "admins": ["UADMIN"]},
                            budget={"monthly": 100, "thresholds": [50, 80, 100], "over_budget": "warn",
                                    "users": {"UALICE": 40}, **budget})


def _use(engine, clock, owner: str, count: int, hours: float, project: str | None = None, provider: str = "a"):
    """Book, run for `hours` (billed by accrual on the way), release; returns the booking id."""
    booked = book(engine, BookingAsk(owner=owner, gpu="a100", count=count, duration=timedelta(hours=24),
                                     provider=provider, project=project))
    booking = start_now(engine, booked.booking)
    assert booking.state == BookingState.ACTIVE
    clock.advance(hours=hours / 2)
    accrue(engine, booking)
    clock.advance(hours=hours / 2)
    release(engine, booking.id, owner)
    return booking.id


def _ledger_sums(engine, since, until, key) -> dict[str, Decimal]:
    """Expected spend computed straight from usage_intervals rows, independently of the report code."""
    sums: dict[str, Decimal] = defaultdict(Decimal)
    with engine.db.session() as session:
        for row in session.exec(select(UsageIntervalRow)):
            start, end = max(_utc(row.start), since), min(_utc(row.end), until)
            if end > start:
                seconds = Decimal(int((end - start).total_seconds()))
                sums[getattr(row, key)] += Decimal(row.price_per_gpu_hour) * row.count * seconds / 3600
    return {k: v.quantize(CENT) for k, v in sums.items()}


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def test_reports_and_digest_figures_equal_the_ledger_sums(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    clock.current = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    alice = _use(engine, clock, "UALICE", 4, 2, project="llm")
    _use(engine, clock, "UBOB", 2, 3, provider="b")
    _use(engine, clock, "UALICE", 1, 1.5, provider="c")
    since, until = day_bounds(engine, date(2026, 11, 2))
    with engine.db.session() as session:
        session.add_all([TelemetrySampleRow(booking_id=alice, gpu_index=i, util=2.0, temp_c=50,
                                            at=datetime(2026, 11, 2, 9, 30, tzinfo=UTC)) for i in range(4)])
    expected = _ledger_sums(engine, since, until, "owner")
    assert expected == {"UALICE": Decimal("15.15"), "UBOB": Decimal("10.80")}  # 4×2h×1.50 + 1.5h×2.10; 2×3h×1.80
    report = cost_report(engine, since, until, "user")
    assert {r.name: r.spend.quantize(CENT) for r in report.rows} == expected
    assert report.total.gpu_hours == Decimal("15.5")
    clock.current = datetime(2026, 11, 3, 9, 30, tzinfo=UTC)
    digest = build_digest(engine, date(2026, 11, 2))
    assert {r.name: r.spend.quantize(CENT) for r in digest.by_user} == expected
    assert {r.name: r.spend.quantize(CENT) for r in digest.by_provider} == _ledger_sums(engine, since, until,
                                                                                           "provider")
    assert digest.spent.quantize(CENT) == sum(expected.values())
    assert digest.month_spent.quantize(CENT) == sum(expected.values())
    waste = digest.top_waste[0]  # 4 GPUs idle for 5 minutes (one reading, trusted for telemetry_stale_after)
    assert (waste.booking_id, waste.owner, waste.waste.quantize(CENT)) == (alice, "UALICE", Decimal("0.50"))


def test_the_digest_lists_what_a_failed_booking_tried_from_the_ledgers_attempts(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=2)))
    tried = [("a", "r1", "no_capacity"), ("b", "r2", "quota"), ("a", "r1", "no_capacity"), ("b", "r2", "launched"),
             ("b", "r2", "vanished"), ("c", None, "auth")]
    with engine.db.session() as session:
        for provider, region, outcome in tried:
            attempt_repo.record_attempt(booked.booking.id, provider, region, "a100", outcome, 10, clock(),
                                        session=session)
        assert repo.transition(booked.booking.id, [BookingState.REQUESTED], BookingState.FAILED, session=session,
                               failure="a r1: no capacity; …", released_at=clock())
    clock.advance(days=1)
    (failed,) = build_digest(engine, (clock() - timedelta(days=1)).date()).failed
    # the last three distinct failures, oldest first (a repeat counts where it last happened; a launch is none)
    assert failed.tried == (("a", "r1", "no_capacity"), ("b", "r2", "vanished"), ("c", "", "auth"))


def test_the_digest_chart_is_a_valid_png(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    _use(engine, clock, "UALICE", 2, 1)
    clock.advance(days=1)
    assert send_digest(engine, clock.current.date() - timedelta(days=1))
    assert engine.notifier.uploads == [], "the chart is owed with the digest, drawn and shared as it is delivered"
    deliver(engine)
    (channel, filename, data, comment), = engine.notifier.uploads
    assert channel == "CDIGEST" and filename.endswith(".png") and data.startswith(PNG_SIGNATURE)
    assert "against the budget" in comment
    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert "Digest for 2026-11-02" in engine.notifier.posts[0][1]


def test_a_quiet_day_says_so_in_one_line(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    assert send_digest(engine, date(2026, 11, 1))
    deliver(engine)
    assert engine.notifier.posts == [("CDIGEST", "📊 Digest for 2026-11-01: no activity.")]
    assert engine.notifier.uploads == [], "a quiet day has no chart"


def test_the_digest_is_posted_once_when_two_replicas_share_the_database(database_url, clock):
    first = make_engine(database_url, _policy(), clock)
    second = make_engine(database_url, _policy(), clock)
    _use(first, clock, "UALICE", 1, 1)
    clock.current = datetime(2026, 11, 3, 8, 59, tzinfo=UTC)
    assert not run_digest(first) and not run_digest(second)  # before digest_at (09:00)
    clock.current = datetime(2026, 11, 3, 9, 1, tzinfo=UTC)
    results: list[bool] = []
    threads = [threading.Thread(target=lambda e=e: results.append(run_digest(e))) for e in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, True]
    deliver(first)
    deliver(second)
    posts = first.notifier.posts + second.notifier.posts
    assert len(posts) == 1 and posts[0][0] == "CDIGEST"
    assert not run_digest(make_engine(database_url, _policy(), clock))  # a restart does not post it again


def _budget_dms(engine) -> list[tuple[str, str]]:
    return [(to, text) for to, text in engine.notifier.dms if text.startswith(("💸", "📈"))]


def test_each_threshold_fires_once_per_month_even_after_a_restart(database_url, clock):
    quiet = {"forecast_alert": False}
    engine = make_engine(database_url, _policy(**quiet), clock)
    _use(engine, clock, "UALICE", 4, 3)  # 4 × 3 h × $1.50 = $18: user UALICE at 45 % of $40, team at 18 %
    assert check_budgets(engine) == []
    _use(engine, clock, "UALICE", 1, 2)  # +$3 → $21: UALICE 52.5 % → 50 % crossed
    told = check_budgets(engine)
    assert [(n.to, n.scope, n.percent) for n in told] == [("CDIGEST", "user:UALICE", 50), ("UALICE", "user:UALICE", 50)]
    deliver(engine)
    said = "💸 Budget user:UALICE passed 50 % in 2026-11: $21.00 spent + $0.00 committed of $40.00 (53 %)."
    assert _budget_dms(engine) == [("CDIGEST", said), ("UALICE", said)]
    restarted = make_engine(database_url, _policy(**quiet), clock)
    assert check_budgets(restarted) == []
    deliver(restarted)
    assert _budget_dms(restarted) == [] and _budget_dms(engine) == [("CDIGEST", said), ("UALICE", said)]
    _use(restarted, clock, "UALICE", 4, 2.5)  # +$15 → $36: 90 % → 80 % crossed, 50 % not again
    assert {(n.scope, n.percent) for n in check_budgets(restarted)} == {("user:UALICE", 80)}
    clock.current = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # a new month starts from nothing
    assert check_budgets(make_engine(database_url, _policy(**quiet), clock)) == []
    (status,) = [s for s in budget_statuses(restarted, datetime(2026, 11, 30, tzinfo=UTC)) if s.scope == "user:UALICE"]
    assert status.crossed == [50, 80]


def test_every_budget_shows_its_own_spend_and_what_running_bookings_still_commit(database_url, clock):
    engine = make_engine(database_url, _policy(projects={"llm": 30}), clock)
    clock.current = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    _use(engine, clock, "UALICE", 4, 2, project="llm")  # 4 × 2 h × $1.50 = $12
    _use(engine, clock, "UBOB", 2, 3, provider="b")  # 2 × 3 h × $1.80 = $10.80
    running = book(engine, BookingAsk(owner="UBOB", gpu="a100", count=2, duration=timedelta(hours=5),
                                      provider="a", project="llm"))
    start_now(engine, running.booking)  # 2 × 5 h × $1.50 = $15 still to come, all of it UBOB's and llm's
    statuses = {s.scope: (s.spent.quantize(CENT), s.committed.quantize(CENT))
                for s in budget_statuses(engine, clock())}
    assert statuses == {"team": (Decimal("22.80"), Decimal("15.00")), "user:UALICE": (Decimal("12.00"), 0),
                        "project:llm": (Decimal("12.00"), Decimal("15.00"))}


def test_a_month_end_forecast_over_budget_alerts_once(database_url, clock):
    engine = make_engine(database_url, _policy(users={}, thresholds=[500]), clock)
    clock.current = datetime(2026, 11, 3, 0, 0, tzinfo=UTC)
    _use(engine, clock, "UBOB", 2, 2)  # $6 in ~2 days of a 30-day month → ≈ $88, under $100
    assert check_budgets(engine) == []
    _use(engine, clock, "UBOB", 2, 1)  # $9 by day 2.1 → ≈ $126 at month end
    told = check_budgets(engine)
    assert [(n.to, n.forecast is not None) for n in told] == [("CDIGEST", True), ("UADMIN", True)]
    deliver(engine)
    (said,) = {text for _to, text in _budget_dms(engine)}
    assert [to for to, _text in _budget_dms(engine)] == ["CDIGEST", "UADMIN"]
    assert said.startswith("📈 At this month's rate team will spend") and "over its $100.00 budget" in said
    assert check_budgets(make_engine(database_url, _policy(users={}, thresholds=[500]), clock)) == []


def test_warn_books_and_block_refuses_with_the_figures(database_url, clock):
    engine = make_engine(database_url, _policy(monthly=10), clock)
    ask = BookingAsk(owner="UBOB", gpu="a100", count=4, duration=timedelta(hours=6))
    assert book(engine, ask).decision == "warn"  # booked, not launched: it holds its $36 all the same
    blocking = make_engine(database_url, _policy(monthly=10, over_budget="block"), clock)
    with pytest.raises(Refused, match=r"team would reach \$72\.00 of \$10\.00"):
        book(blocking, ask.__class__(**{**ask.__dict__, "owner": "UCAROL"}))
    assert book(blocking, ask.__class__(**{**ask.__dict__, "owner": "UADMIN"})).decision == "warn"


def test_pool_fees_are_split_by_gpu_seconds(database_url, clock):
    policy = simulated_policy(providers={"lab": {"kind": "pool", "machines": [
        {"host": "box1", "gpu": "a100", "gpus": 8, "monthly_cost": 3000}]}})
    from gpubot.providers.pool.adapter import TeamPool
    from gpubot.scheduling.acquisition.pool import pool_allocations

    engine = make_engine(database_url, policy, clock, providers={})
    engine.providers["lab"] = TeamPool("lab", policy.providers["lab"], lambda: pool_allocations(engine.db, "lab"))
    since = clock.current
    _use(engine, clock, "UALICE", 3, 2, provider="lab")
    _use(engine, clock, "UBOB", 1, 2, provider="lab")
    report = cost_report(engine, since, since + timedelta(days=3), "user")
    spend = {r.name: r.spend for r in report.rows}
    assert report.total.spend.quantize(CENT) == Decimal("300.00")  # 3 of 30 days of $3,000
    assert spend["UALICE"].quantize(CENT) == Decimal("225.00") and spend["UBOB"].quantize(CENT) == Decimal("75.00")


def test_a_provider_cost_more_than_two_percent_off_is_reported(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=2, duration=timedelta(hours=4),
                                     provider="a"))
    booking = start_now(engine, booked.booking)
    clock.advance(hours=1)
    instance = Instance("a", booking.instance_id or "", booking.instance_name or "")
    assert compare(engine, booking, instance.__class__(**{**instance.__dict__, "cost_so_far": Decimal("3.05")})) \
        is None  # ours 2 × 1 h × 1.50 = 3.00; 1.7 % apart
    check = compare(engine, booking, instance.__class__(**{**instance.__dict__, "cost_so_far": Decimal("3.20")}))
    assert check.basis == "total" and check.ours == Decimal(3) and check.diff_percent.quantize(Decimal("0.01")) \
        == Decimal("6.67")
    rate = compare(engine, booking, instance.__class__(**{**instance.__dict__, "extra": {"cost_per_hour": 3.5}}))
    assert rate.basis == "rate" and rate.ours == Decimal("3.00") and rate.theirs == Decimal("3.5")
    with engine.db.session() as session:
        assert repo.get_booking(booking.id, session=session).state == BookingState.ACTIVE
