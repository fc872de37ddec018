"""Notices: what the engine tells people, as data. The bot words them; the engine never holds chat text.

Each notice is a frozen dataclass with the facts a renderer needs, a stable `key` (the outbox stores a notice
once per key, so a retried use case, a second replica or a crash-and-redo never tells twice) and the `actions`
it offers as `NoticeAction`s (the bot maps each to its own button). `audience` says who reads it: a person (a
DM), the booking's own message (updated in place), a channel, or on-call. `to_record`/`from_record` turn a
notice into a JSON-able dict and back, for the outbox.

The notices live in modules by what they tell of: `base` (what every notice shares), `booking` (a booking from its
request to its end), `booking_progress` (its acquisition's steps), `running` (a running machine), `money` (approvals,
budgets, the digest), `watches`, `oncall`; `codec` turns them into outbox records and back.
"""

from __future__ import annotations

from gpubot.domain.notices.base import Audience, Notice, NoticeAction, _AboutBooking  # noqa: F401 (bot.notices' type)
from gpubot.domain.notices.booking import (
    BookingCancelled,
    BookingExtended,
    BookingGaveUp,
    BookingInterrupted,
    BookingQueued,
    BookingReady,
    BookingReleased,
    BookingRequested,
    BootAbandoned,
    CudaExclusion,
    QuoteBudgetRow,
    ReleaseWhy,
    ShapeChoice,
    SpotFellBack,
)
from gpubot.domain.notices.booking_progress import BookingProgress, ProgressStep, StepKind
from gpubot.domain.notices.codec import NOTICE_TYPES, from_record, to_record
from gpubot.domain.notices.money import (
    AlertRow,
    ApprovalDecided,
    ApprovalNeeded,
    AttemptsRow,
    BookingRow,
    BudgetCrossed,
    CheckRow,
    DigestChart,
    DigestReady,
    GroupRow,
    LaunchHeld,
    WasteRow,
)
from gpubot.domain.notices.oncall import ProviderAlert
from gpubot.domain.notices.running import (
    ExpiryWarning,
    IdleKept,
    IdleReclaimed,
    IdleReminder,
    IdleSnoozed,
    Overheat,
    TelemetryStale,
    UtilisationUnknown,
)
from gpubot.domain.notices.watches import WatchEnded, WatchFired

__all__ = [
    "NOTICE_TYPES",
    "AlertRow",
    "ApprovalDecided",
    "ApprovalNeeded",
    "AttemptsRow",
    "Audience",
    "BookingCancelled",
    "BookingExtended",
    "BookingGaveUp",
    "BookingInterrupted",
    "BookingProgress",
    "BookingQueued",
    "BookingReady",
    "BookingReleased",
    "BookingRequested",
    "BookingRow",
    "BootAbandoned",
    "BudgetCrossed",
    "CheckRow",
    "CudaExclusion",
    "DigestChart",
    "DigestReady",
    "ExpiryWarning",
    "GroupRow",
    "IdleKept",
    "IdleReclaimed",
    "IdleReminder",
    "IdleSnoozed",
    "LaunchHeld",
    "Notice",
    "NoticeAction",
    "Overheat",
    "ProgressStep",
    "ProviderAlert",
    "QuoteBudgetRow",
    "ReleaseWhy",
    "ShapeChoice",
    "SpotFellBack",
    "StepKind",
    "TelemetryStale",
    "UtilisationUnknown",
    "WasteRow",
    "WatchEnded",
    "WatchFired",
    "from_record",
    "to_record",
]
