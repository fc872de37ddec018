"""A job waiting in Slurm's own queue is not billed and not timed as a hung boot; its bill and booked time start
when Slurm starts it — on a real ledger (SQLite and PostgreSQL) and a real one-node cluster (tests/slurm_cluster.py).

The node's four A100s are held by a job submitted outside the engine; the booking's job waits behind it (PENDING,
Resources) past `ready_timeout` (2 s here: a queued job is bounded by `queue_timeout` instead), then starts when
that job is cancelled. Slurm runs in real time, so the engine runs on the wall clock and every change is polled for
with a deadline."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.model import Booking, BookingState, OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.slurm.config import slurm_config
from gpubot.providers.slurm.parsing import parse_jobs
from gpubot.providers.slurm.provider import SlurmProvider
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.booking.booking import BookingAsk, book, release
from gpubot.scheduling.engine import utc_now
from gpubot.scheduling.money.costs import budget_lines

from tests.engine_kit import deliver, make_engine
from tests.reliability.figures import record
from tests.slurm_cluster import TEST_USER, SlurmCluster

ALICE = "UALICE"
LAB = {"kind": "slurm", "partition": "gpu", "gpu_types": {"a100": "a100"}, "prices": {"a100": 0.90},
       "users": {ALICE: TEST_USER}}


def _lab(cluster: SlurmCluster) -> SlurmProvider:
    return SlurmProvider("lab", slurm_config({**LAB, "slurm_conf": str(cluster.conf),
                                              "workdir": str(cluster.scratch)}, "lab"))


def _until(check: Callable[[], object], seconds: float = 30):
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {seconds:g}s"
        time.sleep(0.1)
    return found


def _load(engine, booking_id: int) -> Booking:
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _billed(engine, booking_id: int):
    with engine.db.session() as session:
        return ledger.list_intervals(booking_id, session=session)


def _team_line(engine):
    with engine.db.session() as session:
        return next(line for line in budget_lines(engine, ALICE, None, session=session) if line.scope == "team")


def _full_node(database_url: str, slurm: SlurmCluster, queue_timeout: str):
    """(engine, the cluster's adapter, the job holding every A100 of the node): the engine's bookings will queue."""
    lab = _lab(slurm)
    policy = policy_from_dict({
        "team": {"admins": ["UADMIN"]}, "providers": {"lab": {**LAB, "slurm_conf": str(slurm.conf),
                                                              "workdir": str(slurm.scratch)}},
        "acquire": {"ready_poll_every": "1s", "ready_poll_max": "1s", "ready_timeout": "2s",
                    "queue_timeout": queue_timeout, "offer_cache": "1s", "give_up_after": "1s"}})
    engine = make_engine(database_url, policy, utc_now, providers={"lab": lab})
    [offer] = lab.offers(OfferRequest("a100", 4))
    blocker = lab.launch(offer, LaunchSpec(900, "gpubot-900-00000384", owner=ALICE, duration=timedelta(minutes=5)))
    _until(lambda: lab.describe(blocker).ready)
    return engine, lab, blocker


def test_a_job_queued_in_slurm_is_billed_and_booked_from_its_start_not_its_submit(database_url, slurm):
    engine, lab, blocker = _full_node(database_url, slurm, "10m")
    booked = book(engine, BookingAsk(owner=ALICE, gpu="a100", count=4, duration=timedelta(minutes=2))).booking
    waiting = acquire(engine, booked.id)
    assert waiting.state == BookingState.BOOTING and waiting.provider == "lab"
    assert waiting.ends_at is None, "no end while it waits: its booked time has not started"
    submitted = waiting.started_at
    # Past ready_timeout (2 s) the job still waits: it is queued in Slurm with a reason, not a hung boot.
    _until(lambda: follow_booting(engine) is not None and utc_now() - submitted > timedelta(seconds=3), 10)
    still = _load(engine, booked.id)
    assert still.state == BookingState.BOOTING and _billed(engine, booked.id) == []
    line = _team_line(engine)
    assert (line.spent, line.committed) == (Decimal(0), Decimal("0.12")), "its estimate is held, nothing spent"

    lab.terminate(blocker)
    _until(lambda: follow_booting(engine) is not None and _load(engine, booked.id).state == BookingState.ACTIVE)
    ready = _load(engine, booked.id)
    [job] = parse_jobs(slurm.run("scontrol", "-o", "show", "job", "-d", ready.instance_id).stdout)
    waited = (ready.started_at - submitted).total_seconds()
    assert ready.started_at == job.start, "the bill and booked time start at Slurm's own start"
    assert ready.ends_at == job.start + timedelta(minutes=2) == job.end, "its end is Slurm's: start + --time"
    assert waited > 2, "it waited past ready_timeout (Slurm says its start to the second)"

    _until(lambda: utc_now() - ready.started_at > timedelta(seconds=1), 5)
    release(engine, booked.id, ALICE)
    deliver(engine)
    done, stretches = _load(engine, booked.id), _billed(engine, booked.id)
    billed = sum((s.end - s.start).total_seconds() for s in stretches)
    ran = (done.released_at - ready.started_at).total_seconds()
    assert stretches[0].start == job.start and abs(billed - ran) < 0.01, (stretches, ran)
    assert billed < waited + ran - 2, "the wait is not billed"
    [released] = [text for _u, text in engine.notifier.dms if text.startswith(f"#{booked.id} released")]
    shown = re.search(r"after (\d+)s", released)
    assert shown and abs(int(shown[1]) - ran) <= 1, f"the DM says what ran (billed), not the wait: {released}"
    ledger_kind = database_url.split(":")[0].split("+")[0]
    record("slurm billing", f"{ledger_kind}: the job waited {waited:.1f} s in Slurm's queue, ran "
                            f"{ran:.1f} s; billed {billed:.1f} s (from the submit it would have been "
                            f"{waited + ran:.1f} s)")


def test_a_job_still_in_slurms_queue_at_queue_timeout_is_cancelled_and_nothing_is_billed(database_url, slurm):
    engine, _lab_provider, _blocker = _full_node(database_url, slurm, "3s")
    booked = book(engine, BookingAsk(owner=ALICE, gpu="a100", count=4, duration=timedelta(minutes=2))).booking
    waiting = acquire(engine, booked.id)
    assert waiting.state == BookingState.BOOTING
    _until(lambda: follow_booting(engine) is not None and _load(engine, booked.id).state != BookingState.BOOTING, 15)
    gave_up = _load(engine, booked.id)
    with engine.db.session() as session:
        tried = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(booked.id, session=session)]
    assert ("lab", "queue_timeout") in tried, tried
    assert _billed(engine, booked.id) == [], "a job that never started cost nothing"
    assert slurm.job_ids("PD") == [], "its job was cancelled"
    deliver(engine)
    said = [text for _u, text in engine.notifier.dms if "still had the job in its queue" in text]
    assert f"#{booked.id}: lab gpu still had the job in its queue after 3s; it was cancelled (nothing was billed). " \
           "Trying the next offer." in said, said
    assert not any("billed" in text and "nothing was billed" not in text for text in said), said
    assert gave_up.state in (BookingState.ACQUIRING, BookingState.QUEUED, BookingState.FAILED)
