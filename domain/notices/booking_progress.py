"""A booking message's progress: the steps of an acquisition as facts (the bot words each kind)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import ClassVar

from gpubot.domain.notices.base import Audience, _AboutBooking

__all__ = ["BookingProgress", "ProgressStep", "StepKind"]


class StepKind(StrEnum):
    """What a progress step says happened; its facts are the `ProgressStep` fields named here."""

    LOOKING = "looking"  # acquisition started
    LAUNCHING = "launching"  # provider, region
    OVER_BUDGET = "over_budget"  # provider, region: skipped, that offer would pass a budget
    LAUNCH_FAILED = "launch_failed"  # provider, region, outcome (the ProviderError kind); an image refused
    # (outcome image_refused): detail the image, allowed the owners or projects, then which ("owners"/"projects")
    BOOTING = "booting"  # provider, region, elapsed; waiting in the provider's own queue (a pending Slurm job):
    # outcome (the provider's reason), at (its expected start, None: unknown) and limit (how long until then)
    READY = "ready"  # provider, region, elapsed (None: ready at once), checks
    BOOT_ABANDONED = "boot_abandoned"  # provider, region, outcome (not_ready, vanished), elapsed (billed), limit
    WAIT = "wait"  # gpu, elapsed (median at this hour, None: none), samples, night, night_samples, days, suggest_night
    HELD = "held"  # gpu held by `count` running bookings: enough end in `elapsed` (`at_least`: the last ends then and
    # frees too few), queue position `other`; `too_late` when that is after it gives up, in `limit` (domain.waits)
    ADVICE = "advice"  # gpu, count (landed) instead of wanted_gpu, wanted_count
    CHEAPER = "cheaper"  # waits for provider, region at cost (per GPU-hour, currency), expected free in `elapsed`,
    # rather than take other_provider at other_price now; at `at` (acquire.wait_for_cheaper) it takes the best free
    INTERRUPTED = "interrupted"  # provider, elapsed (ran), cost, currency, then; other (the resuming booking), limit
    RESUMES = "resumes"  # provider, other (the interrupted booking), limit (the time left)
    RECOVERED = "recovered"  # a launch found by reconcile after a restart; reachability is being checked
    REQUEUED = "requeued"  # interrupted while acquiring (a restart); queued to try again
    REPLACING = "replacing"  # on a booking being replaced: its replacement `other`, where it runs (provider, region;
    # empty while it is not placed yet); `then` the state it ended in (failed, cancelled, released) when it ended
    # before releasing this one
    TEXT = "text"  # a line worded before progress was data (an outbox row owed before the upgrade), in `text`


@dataclass(frozen=True)
class ProgressStep:
    """One step of a booking's progress, as facts (which fields count depends on `kind`, see StepKind)."""

    kind: StepKind
    provider: str = ""
    region: str = ""
    outcome: str = ""
    elapsed: timedelta | None = None
    limit: timedelta | None = None
    checks: int = 0
    cost: Decimal | None = None
    currency: str = ""
    then: str = ""
    other: int | None = None
    gpu: str = ""
    count: int = 0
    wanted_gpu: str = ""
    wanted_count: int = 0
    samples: int = 0
    night: timedelta | None = None
    night_samples: int = 0
    days: int = 0
    suggest_night: bool = False
    text: str = ""  # TEXT: the line as worded
    detail: str = ""  # LAUNCH_FAILED: the provider's own words for an error of no known kind (a fact, not our words)
    at_least: bool = False
    too_late: bool = False
    at: datetime | None = None  # BOOTING: the provider's expected start of a job waiting in its queue
    allowed: tuple[str, ...] = ()  # LAUNCH_FAILED image_refused: the owners or projects an image may come from
    other_provider: str = ""  # CHEAPER: the provider of the best offer free now
    other_price: Decimal | None = None  # CHEAPER: its price per GPU-hour


@dataclass(frozen=True)
class BookingProgress(_AboutBooking):
    """The booking's message shows a new step (`step` numbers them, so a newer one never loses to an older):
    the `trail` of steps so far (shown joined by arrows), `queued` when it ended in the queue, and `notes` shown on
    lines of their own below (the expected wait, advice on the shape it landed on)."""

    audience: ClassVar[Audience] = Audience.BOOKING_MESSAGE
    state: str = "requested"
    step: int = 0
    provider: str = ""
    region: str = ""
    trail: tuple[ProgressStep, ...] = ()
    queued: bool = False
    notes: tuple[ProgressStep, ...] = ()

    @property
    def key(self) -> str:
        return f"progress:{self.booking_id}:{self.step}"
