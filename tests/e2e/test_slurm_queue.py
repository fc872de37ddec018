"""A full cluster over signed HTTP against a real slurmctld: the job waits in Slurm's own queue, its booking message
shows Slurm's reason and expected start, and it starts (ready DM naming the node and GPUs) when GPUs free up.

The node (gpu:a100:4, gpu:h100:4) is filled by two 4-GPU bookings; the third is quoted afresh on the full node
(`offer_cache` of 1 s), offered with a wait, submitted, and left PENDING by Slurm. Only the cluster is configured,
so before the queued offer the booking went to gpubot's own queue instead."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import ledger
from gpubot.domain.model import BookingState
from gpubot.providers.slurm.parsing import parse_jobs

from tests.e2e.server_kit import RunningBot, as_shown, book, booking_of, config, dm, serving, until, wait_call
from tests.reliability.figures import record
from tests.slurm_cluster import NODE, TEST_USER, SlurmCluster

ALICE = "UALICE"
CONFIG = config(scheduler={"tick": "1s"},
                acquire={"offer_cache": "1s", "ready_poll_every": "1s", "ready_poll_max": "1s", "ready_timeout": "10m"},
                providers=None)  # and the cluster's [providers.lab]
QUEUE_LINE = re.compile(r"waiting in lab gpu's queue \((?P<reason>\w+)\), expected to start (?P<at>[\d-]+ [\d:]+) UTC "
                        r"\(in (?P<wait>[^)]*)\) · ")


@pytest.fixture(scope="module")
def bot(tmp_path_factory, slurm_cluster: SlurmCluster) -> Iterator[RunningBot]:
    slurm_cluster.cancel_all()
    lab = slurm_cluster.provider_toml({ALICE: TEST_USER})
    with serving(tmp_path_factory.mktemp("slurm-queue"), CONFIG + lab) as running:
        yield running
    slurm_cluster.cancel_all()


def shown_lines(bot: RunningBot, label: str) -> list[str]:
    """Every text the booking's message was updated to, oldest first."""
    return [as_shown(c.args.get("text", "")) for c in bot.api.calls
            if c.method == "chat.update" and f"*{label}*" in c.args.get("text", "")]


def test_two_4_gpu_bookings_fit_and_a_third_waits_in_slurms_queue_then_starts_on_release(bot, slurm_cluster):
    first, second = book(bot, ALICE, "a100x4 5m"), book(bot, ALICE, "h100x4 5m")
    for label in (first, second):
        assert f"ssh {TEST_USER}@{NODE}" in dm(bot, ALICE, f"{label} is ready", timeout=30)
    third = book(bot, ALICE, "a100x4 5m")
    waiting = until(lambda: (b := booking_of(bot, third)).instance_id and b)
    assert waiting.state == BookingState.BOOTING and waiting.provider == "lab"
    [free] = [line.split()[-1] for line in httpx.get(f"{bot.url}/metrics", timeout=10).text.splitlines()
              if line.startswith("gpubot_gpus_available{") and 'provider="lab"' in line and 'gpu="a100"' in line]
    assert float(free) == 0, "the third was quoted on the full node"

    def queue_line():
        return next((m for text in reversed(shown_lines(bot, third)) if (m := QUEUE_LINE.search(text))), None)

    shown = until(queue_line)
    [job] = parse_jobs(slurm_cluster.run("scontrol", "-o", "show", "job", "-d", waiting.instance_id).stdout)
    assert (job.state, shown["reason"]) == ("PENDING", "Resources"), (job, shown.group(0))
    assert job.reason == "Resources" and job.start is not None
    assert datetime.strptime(shown["at"], "%Y-%m-%d %H:%M").replace(tzinfo=UTC) == job.start.replace(second=0), \
        "the start shown is Slurm's estimate"
    with bot.db.session() as session:
        tried = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(waiting.id, session=session)]
    assert tried == [("lab", "launched")], tried  # straight into Slurm's queue, not gpubot's
    assert bot.command("quote a100x4 5m", user=ALICE).status_code == 200
    quoted = as_shown(wait_call(bot, "response_url", "A100", "GPU-h")["text"])
    assert "⏳ lab gpu: $0.90/GPU-h, ≈ $0.30 (busy now: the job would wait in its queue)" in quoted, quoted

    released = time.monotonic()
    assert bot.command(f"release {first.lstrip('#')}", user=ALICE).status_code == 200
    ready = as_shown(dm(bot, ALICE, f"{third} is ready", timeout=30))
    to_ready = time.monotonic() - released
    assert f"ssh {TEST_USER}@{NODE}  # gpu:a100:4(IDX:0-3)" in ready, ready
    started = booking_of(bot, third)
    assert started.state == BookingState.ACTIVE
    record("slurm e2e", f"full node: the third 4-GPU job waited in Slurm's queue ({shown['reason']}, expected "
                        f"{shown['at']} UTC); /gpu release of the first -> its ready DM {to_ready:.2f} s")

    # Its bill and booked time start when Slurm starts it, not at the submit: the wait is not billed, and its end is
    # Slurm's own (StartTime + --time), shown in /gpu status.
    [job] = parse_jobs(slurm_cluster.run("scontrol", "-o", "show", "job", "-d", started.instance_id).stdout)
    waited = (started.started_at - waiting.started_at).total_seconds()
    assert started.started_at == job.start and started.ends_at == job.start + timedelta(minutes=5) == job.end
    assert bot.command("status", user=ALICE).status_code == 200
    status = as_shown(wait_call(bot, "response_url", third)["text"])
    assert job.end.strftime("%H:%M") in status, status
    until(lambda: datetime.now(UTC) - started.started_at > timedelta(seconds=2))
    assert bot.command(f"release {third.lstrip('#')}", user=ALICE).status_code == 200
    gone = as_shown(dm(bot, ALICE, f"{third} released", timeout=30))
    done = until(lambda: (b := booking_of(bot, third)).state == BookingState.RELEASED and b)
    with bot.db.session() as session:
        stretches = ledger.list_intervals(done.id, session=session)
    billed = sum((s.end - s.start).total_seconds() for s in stretches)
    ran = (done.released_at - job.start).total_seconds()
    assert stretches and stretches[0].start == job.start and abs(billed - ran) < 0.01, (stretches, ran)
    # The bill starts at Slurm's start (above), which came after the submit: the wait is not billed. (How long the
    # job waited depends on how fast the first release lands; a fast machine made it under a second.)
    assert waited > 0, "the wait in Slurm's queue is not billed"
    said = re.search(r"after (\d+)s", gone)
    assert said and abs(int(said[1]) - ran) <= 1, f"the release DM says what was billed: {gone}"
    record("slurm e2e", f"full node: the third job waited {waited:.1f} s in Slurm's queue and ran {ran:.1f} s; "
                        f"billed {billed:.1f} s (from the submit it would have been {waited + ran:.1f} s)")
