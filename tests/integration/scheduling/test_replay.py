"""The replay runs a trace through the real engine: figures computable by hand, reproducible, nothing lost."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.domain.errors import ConfigError
from gpubot.domain.replay_trace import TraceJob
from gpubot.scheduling.replay.pieces import OUTCOMES
from gpubot.scheduling.replay.run import replay_policy
from gpubot.scheduling.replay.runner import ReplayInput
from gpubot.scheduling.replay.setup import policy_names, replay_config

_TIMES = {"replay_seconds": 0, "bound_seconds": 0}  # wall-clock times differ between runs


def _document(**replay) -> dict:
    return {
        "team": {"currency": "USD", "timezone": "UTC"},
        "budget": {"monthly": 100000},
        "idle": {"util_below": 15, "for": "6m", "grace": "30m"},
        "providers": {"a": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "a-1", "count": 16,
                                                             "price": 2.00}]}},
        "replay": {"start": "2026-03-02T00:00:00Z", "release_when_done": 0, "over_booking": 1.5, **replay},
    }


def _hand_trace() -> ReplayInput:
    """j1: 4 GPUs for 2 h, idle from 0:30 to 1:30 of its run; j2: 2 GPUs for 1 h, always busy."""
    jobs = [TraceJob("j1", 0, 4, "v100", 7200, "alice"), TraceJob("j2", 0, 2, "v100", 3600, "bob")]
    util = {"j1": [(t, 5.0) for t in range(1800, 5400, 60)], "j2": [(60, 90.0)]}
    return ReplayInput(jobs, util)


def test_without_reclaim_every_slot_is_paid_to_its_end():
    figures = replay_policy(_document(), "baseline", _hand_trace()).figures
    # j1 books 3 h (2 h × 1.5), j2 2 h; nobody releases early, so both run out their slots at $2/GPU-h
    assert figures.spend == Decimal("32.00") == 4 * 3 * Decimal(2) + 2 * 2 * Decimal(2)
    assert figures.gpu_hours == 16 and figures.work_gpu_hours == 10
    # idle: j1 1 h mid-run + 1 h after it ends (4 GPUs), j2 1 h after it ends (2 GPUs)
    assert figures.idle_gpu_hours == 10 and figures.idle_cost == Decimal(20)
    assert (figures.reclaimed_gpu_hours, figures.reclaims, figures.failed) == (0, 0, 0)
    assert figures.reminders == 3 and figures.wait_p95_s == 0
    # the lower bound: the 10 GPU-h of work at the only price, $2; the spend is 60 % above it
    assert figures.lower_bound == Decimal(20) and figures.above_bound_percent == Decimal(60)


def test_with_a_boot_time_the_work_starts_once_the_machine_is_reachable_and_the_slot_is_paid_from_launch():
    document = _document()
    document["providers"]["a"]["boot_time"] = "6m"
    outcome = replay_policy(document, "baseline", _hand_trace())
    figures = outcome.figures
    assert figures.spend == Decimal("32.00"), "the same slots, billed from their launch, booting included"
    assert figures.work_gpu_hours == 10 and figures.failed == 0
    waits = sorted(p.wait_s for p in outcome.pieces)
    assert all(360 <= w <= 360 + 30 for w in waits), waits
    again = replay_policy(document, "baseline", _hand_trace()).figures
    assert again.__dict__ | _TIMES == figures.__dict__ | _TIMES, "polls reproduce"


def test_idle_reclaim_releases_after_the_grace_and_requeues_the_rest_of_the_job():
    outcome = replay_policy(_document(), "idle-reclaim", _hand_trace())
    figures = outcome.figures
    # j1: idle at 0:30, reminded at 0:36, released at 1:06 (4 GPUs × 1.1 h); it resumes at 1:30 with 0.5 h of
    # work in a new 1 h booking that runs out at 2:30. j2: done at 1:00, reminded 1:06, released 1:36.
    assert figures.spend == 4 * Decimal("1.1") * 2 + 4 * 1 * 2 + 2 * Decimal("1.6") * 2 == Decimal("23.2")
    assert figures.reclaimed_gpu_hours == 4 * Decimal("1.9") + 2 * Decimal("0.4") == Decimal("8.4")
    assert figures.gpu_hours == Decimal("11.6") and figures.work_gpu_hours == Decimal("8.4")
    assert figures.idle_gpu_hours == Decimal("5.6") and figures.idle_cost == Decimal("11.2")
    assert (figures.reclaims, figures.requeued, figures.bookings, figures.failed) == (2, 1, 3, 0)
    assert figures.lower_bound == Decimal("16.8")  # 8.4 GPU-h of work that ran, at $2
    resumed = [p for p in outcome.pieces if p.offset_s]
    assert [(p.job.key, p.offset_s, p.outcome) for p in resumed] == [("j1", 5400, "placed")]


def test_a_finished_job_gets_the_no_process_reminder_and_its_grace_from_its_end():
    outcome = replay_policy(_document(), "no-process-reclaim", _hand_trace())
    figures = outcome.figures
    # j1: idle mid-job from 0:30 while its process still runs, so the utilisation rule reclaims it at 1:06 (4 GPUs ×
    # 1.1 h); it resumes at 1:30, its work ends at 2:00: no process from then, reminded at 2:05 (no_process_for),
    # released at 2:15 (no_process_grace; 0.75 h). j2: done at 1:00, reminded at 1:05, released at 1:15 (1.25 h).
    assert figures.spend == 4 * Decimal("1.1") * 2 + 4 * Decimal("0.75") * 2 + 2 * Decimal("1.25") * 2 == Decimal(
        "19.8")
    assert figures.idle_gpu_hours == 4 * Decimal("0.6") + 4 * Decimal("0.25") + 2 * Decimal("0.25")
    assert (figures.reclaims, figures.reminders, figures.failed) == (3, 3, 0)


def _generated(seed: int, count: int = 40) -> ReplayInput:
    rng = random.Random(seed)
    jobs, util = [], {}
    for i in range(count):
        job = TraceJob(f"g{i}", rng.randrange(0, 8 * 3600), rng.choice([2, 4, 8]), rng.choice(["v100", "a100"]),
                       rng.randrange(600, 9 * 3600), f"u{i % 5}")
        jobs.append(job)
        if i % 2:
            start = rng.randrange(0, job.duration_s)
            util[job.key] = [(start + 60 * k, rng.choice([2.0, 3.0, 95.0]) if k % 7 else 90.0)
                             for k in range(rng.randrange(5, 40))]
    return ReplayInput(sorted(jobs, key=lambda j: j.submit_s), util)


def _busy_document() -> dict:
    document = _document(release_when_done=0.5, spot_max_hours=3, seed=5, baseline_provider="a")
    document["acquire"] = {"give_up_after": "1h"}
    document["booking"] = {"max_duration": "4h"}
    document["providers"] = {
        "a": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "a-1", "count": 8, "price": 2.0},
                                             {"gpu": "a100", "region": "a-1", "count": 8, "price": 3.0}]},
        "b": {"kind": "simulated", "failure_rate": 0.2, "seed": 3,
              "stock": [{"gpu": "v100", "region": "b-1", "count": 8, "price": 1.5, "spot_price": 0.6}]},
        "p": {"kind": "pool", "machines": [{"host": "m1", "gpu": "v100", "gpus": 8, "monthly_cost": 3000}]},
    }
    return document


def test_the_same_seed_gives_the_same_report():
    trace = _generated(11)
    first = replay_policy(_busy_document(), "spot", trace).figures
    again = replay_policy(_busy_document(), "spot", trace).figures
    assert first.spend > 0 and first.replay_seconds > 0
    assert first.__dict__ | _TIMES == again.__dict__ | _TIMES


@pytest.mark.parametrize("name", ["baseline", "cheapest-first", "idle-reclaim", "no-process-reclaim", "pool",
                                  "spot", "wait-cheaper"])
def test_every_booking_ends_placed_reclaimed_and_requeued_or_failed(name):
    assert policy_names(_busy_document()) == ["baseline", "cheapest-first", "idle-reclaim", "no-process-reclaim",
                                              "pool", "spot", "wait-cheaper"]
    outcome = replay_policy(_busy_document(), name, _generated(23))
    by_job = defaultdict(list)
    for piece in outcome.pieces:
        assert piece.outcome in OUTCOMES, (piece.job.key, piece.outcome)
        by_job[piece.job.key].append(piece)
    assert len(by_job) == 40
    for key, pieces in by_job.items():
        pieces.sort(key=lambda p: p.submitted)
        *earlier, last = pieces
        assert all(p.outcome in ("reclaimed", "expired-requeued", "interrupted-requeued", "fell-back")
                   for p in earlier), key
        assert last.outcome != "expired-requeued", key
        if last.outcome in ("placed", "reclaimed"):
            assert last.offset_s + last.ran_s <= last.job.duration_s
    assert outcome.figures.bookings == len(outcome.pieces)
    assert outcome.figures.failed == sum(p.outcome in ("failed", "refused") for p in outcome.pieces)
    assert 0 < outcome.figures.lower_bound <= outcome.figures.spend, "no policy spends less than the bound"


def test_the_busy_trace_exercises_queueing_expiry_and_failures():
    outcomes = {n: replay_policy(_busy_document(), n, _generated(23)).figures for n in ("baseline", "pool")}
    assert outcomes["baseline"].failed > 0 and outcomes["baseline"].wait_p95_s > 0
    assert outcomes["baseline"].requeued > 0  # 4 h slots: longer jobs continue in new bookings
    assert set(outcomes["pool"].spend_by_provider) >= {"p"}
    assert outcomes["pool"].lower_bound >= outcomes["pool"].spend_by_provider["p"], "the pool's fees are sunk"


def _spot_document(**replay) -> dict:
    document = _document(**{"release_when_done": 1, "spot_interruptions_per_hour": 1.0, "checkpoint_every": "30m",
                            **replay})
    document["providers"] = {"s": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "s-1", "count": 1000,
                                                                   "price": 2.0, "spot_price": 1.0}]}}
    return document


def _two_hour_jobs(count: int = 100) -> ReplayInput:
    return ReplayInput([TraceJob(f"s{i}", 600 * i, 1, "v100", 7200, f"u{i % 3}") for i in range(count)], {})


def test_spot_interruptions_happen_at_the_configured_rate_the_same_way_for_the_same_seed():
    outcome = replay_policy(_spot_document(), "spot", _two_hour_jobs())
    figures = outcome.figures
    assert all(p.spot for p in outcome.pieces) and figures.failed == 0
    # machines are billed from launch to release or interruption, so the rate is interruptions per billed hour
    assert figures.interruptions > 60 and abs(figures.interruptions / float(figures.gpu_hours) - 1.0) < 0.25
    assert figures.interrupted_jobs <= 100 and figures.redone_gpu_hours > 0 and figures.resume_wait_p95_s > 0
    credited = defaultdict(int)
    for piece in outcome.pieces:
        credited[piece.job.key] += piece.ran_s - piece.redone_s
        if piece.resumes_from:
            assert piece.offset_s % 1800 == 0 and piece.submitted >= piece.resumes_from  # from its checkpoint
    assert set(credited.values()) == {7200}  # every job's work done exactly once, whatever was redone
    again = replay_policy(_spot_document(), "spot", _two_hour_jobs()).figures
    assert figures.__dict__ | _TIMES == again.__dict__ | _TIMES
    assert replay_policy(_spot_document(spot_interruptions_per_hour=0), "spot", _two_hour_jobs(20)
                         ).figures.interruptions == 0


def test_with_notify_an_interrupted_jobs_remaining_work_is_dropped():
    document = _spot_document()
    document["spot"] = {"on_preempt": "notify"}
    outcome = replay_policy(document, "spot", _two_hour_jobs(40))
    interrupted = [p for p in outcome.pieces if p.outcome == "interrupted"]
    assert interrupted and not any(p.resumes_from for p in outcome.pieces)
    assert all(p.ran_s - p.redone_s + p.dropped_s == 7200 for p in interrupted)
    assert outcome.figures.dropped_gpu_hours == sum(p.dropped_s for p in interrupted) / Decimal(3600)


def test_an_extended_spot_slot_can_still_be_interrupted_and_the_work_is_done_once():
    document = _spot_document(over_booking=0.5, spot_interruptions_per_hour=0.3)
    jobs = ReplayInput([TraceJob(f"x{i}", 900 * i, 1, "v100", 6 * 3600, "u1") for i in range(30)], {})
    outcome = replay_policy(document, "spot", jobs)
    assert outcome.figures.extensions > 0 and outcome.figures.failed == 0
    extended_then_hit = [p for p in outcome.pieces if p.interrupted_at and p.extensions
                         and p.interrupted_at > p.started + timedelta(hours=3)]
    assert extended_then_hit  # an interruption drawn past the first slot still happens once the slot is extended
    credited = defaultdict(int)
    for piece in outcome.pieces:
        credited[piece.job.key] += piece.ran_s - piece.redone_s
    assert set(credited.values()) == {6 * 3600}


def _scarce_spot(**replay) -> dict:
    """8 spot GPUs, and 64 on demand elsewhere; spot gives up after 1 h."""
    document = _document(**{"release_when_done": 1, "spot_interruptions_per_hour": 0, **replay})
    document["acquire"] = {"give_up_after": "1h"}
    document["providers"] = {
        "s": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "s-1", "count": 8, "price": 2.5,
                                              "spot_price": 1.0}]},
        "d": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "d-1", "count": 64, "price": 2.0}]}}
    return document


def test_a_spot_booking_that_finds_no_spot_capacity_falls_back_to_on_demand_and_no_job_fails():
    jobs = ReplayInput([TraceJob(f"f{i}", 0, 8, "v100", 7200, "u1") for i in range(4)], {})
    outcome = replay_policy(_scarce_spot(spot_fallback_after="20m"), "spot", jobs)
    figures = outcome.figures
    assert figures.failed == 0 and figures.fell_back == 3 and figures.spot_bookings == 1
    fell = [p for p in outcome.pieces if p.outcome == "fell-back"]
    on_demand = [p for p in outcome.pieces if p.on_demand]
    assert len(on_demand) == 3 and all(p.wait_s == 20 * 60 for p in on_demand)  # the spot wait counts
    # one spot booking (8 GPUs × 2 h at $1) and three on demand at $2, each released when its job ends
    assert figures.spend == 8 * 2 * 1 + 3 * 8 * 2 * 2 == Decimal(112)
    # the bound may run one job's last hour on the spot GPUs once they are free (within give_up_after)
    assert figures.lower_bound == Decimal(104)
    assert {p.job.key for p in fell} == {p.job.key for p in on_demand}
    without = replay_policy(_scarce_spot(spot_fallback_after="2h"), "spot", jobs).figures
    assert without.failed == 3 and without.fell_back == 0  # gave up waiting before falling back


def test_the_engines_spot_fallback_after_sets_the_replays_and_the_replay_key_overrides_it():
    jobs = ReplayInput([TraceJob(f"f{i}", 0, 8, "v100", 7200, "u1") for i in range(4)], {})
    document = _scarce_spot()
    document["spot"] = {"fallback_after": "20m"}
    outcome = replay_policy(document, "spot", jobs)
    assert outcome.figures.failed == 0 and outcome.figures.fell_back == 3
    assert {p.wait_s for p in outcome.pieces if p.on_demand} == {20 * 60}
    overridden = replay_policy(_scarce_spot(spot_fallback_after="30m") | {"spot": {"fallback_after": "20m"}}, "spot",
                               jobs)
    assert {p.wait_s for p in overridden.pieces if p.on_demand} == {30 * 60}


def test_without_a_setting_a_spot_booking_falls_back_after_three_usual_waits_and_at_least_30_minutes():
    jobs = ReplayInput([TraceJob(f"f{i}", 0, 8, "v100", 7200, "u1") for i in range(2)], {})
    document = _scarce_spot()
    document["acquire"] = {"give_up_after": "3h"}
    outcome = replay_policy(document, "spot", jobs)
    assert outcome.figures.fell_back == 1
    assert [p.wait_s for p in outcome.pieces if p.on_demand] == [1800]  # the first launch waited nothing


def _cheap_and_dear() -> dict:
    document = _document(release_when_done=1)
    document["providers"] = {
        "cheap": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "c-1", "count": 8, "price": 1.0}]},
        "dear": {"kind": "simulated", "stock": [{"gpu": "v100", "region": "d-1", "count": 64, "price": 3.0}]}}
    return document


def test_wait_cheaper_lets_a_job_wait_for_the_cheap_cloud_that_frees_within_the_wait_instead_of_the_dear_one():
    # j0 holds all 8 cheap GPUs for 1 h (booked 1.5 h); j1 comes 10 minutes later and takes the dear cloud at once,
    # unless it waits for the cheap one: booked to free at 1:30, within a 2 h wait; released at 1:00, its job's end.
    jobs = ReplayInput([TraceJob("j0", 0, 8, "v100", 3600, "u0"), TraceJob("j1", 600, 8, "v100", 3600, "u1")], {})
    eager = replay_policy(_cheap_and_dear(), "no-process-reclaim", jobs)
    assert eager.figures.spend == 8 * 1 * 1 + 8 * 1 * 3 == Decimal(32)
    assert eager.figures.spend_by_provider == {"cheap": Decimal(8), "dear": Decimal(24)}
    waited = replay_policy(_cheap_and_dear(), "wait-cheaper", jobs)
    assert waited.figures.spend == 2 * 8 * 1 * 1 == Decimal(16) and waited.figures.failed == 0
    assert set(waited.figures.spend_by_provider) == {"cheap"} and waited.figures.waited_cheaper == 1
    j1 = next(p for p in waited.pieces if p.job.key == "j1")
    # from 0:10 to 1:00, when j0 released the cheap GPUs, and the queue's next round (acquire.poll_every) after it
    assert j1.waited_cheaper and j1.wait_s == 50 * 60 + 30
    assert waited.figures.lower_bound == Decimal(16) == waited.figures.spend


def test_wait_cheaper_takes_the_dear_cloud_when_the_cheap_one_does_not_free_by_the_end_of_the_wait():
    # j0 runs 3 h (booked 4.5 h): the cheap GPUs are not expected free within 1 h, so j1 does not wait at all.
    jobs = ReplayInput([TraceJob("j0", 0, 8, "v100", 3 * 3600, "u0"), TraceJob("j1", 600, 8, "v100", 3600, "u1")],
                       {})
    outcome = replay_policy(_with_wait("1h"), "wait-cheaper", jobs)
    j1 = next(p for p in outcome.pieces if p.job.key == "j1")
    assert not j1.waited_cheaper and j1.wait_s == 0
    assert outcome.figures.spend_by_provider == {"cheap": Decimal(24), "dear": Decimal(24)}


def _with_wait(wait: str) -> dict:
    document = _cheap_and_dear()
    document["replay"]["wait_for_cheaper"] = wait
    return document


def test_the_wait_cheaper_policy_waits_half_of_give_up_after_unless_the_replay_table_says():
    document = _cheap_and_dear()
    assert replay_config(document, "wait-cheaper")[0].acquire.wait_for_cheaper == timedelta(hours=2)  # of 4 h
    document["acquire"] = {"give_up_after": "12h"}
    assert replay_config(document, "wait-cheaper")[0].acquire.wait_for_cheaper == timedelta(hours=6)
    assert replay_config(_with_wait("11h") | {"acquire": {"give_up_after": "12h"}},
                         "wait-cheaper")[0].acquire.wait_for_cheaper == timedelta(hours=11)
    assert replay_config(document, "no-process-reclaim")[0].acquire.wait_for_cheaper is None  # the others: off


def test_the_bound_is_pooled_beyond_exact_bound_limit_and_a_negative_limit_is_refused():
    exact = replay_policy(_document(), "baseline", _hand_trace()).figures
    pooled = replay_policy(_document(exact_bound_limit=0), "baseline", _hand_trace()).figures
    assert (exact.bound_method, pooled.bound_method) == ("exact", "aggregated")
    assert exact.lower_bound == pooled.lower_bound == Decimal(20)  # one cloud at one price: the same number
    with pytest.raises(ConfigError) as refused:
        replay_config(_document(exact_bound_limit=-1), "baseline")
    assert refused.value.key == "replay.exact_bound_limit"
