"""Ports: the Protocols through which the engine reaches the outside world."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol, runtime_checkable

from gpubot.domain.booking_view import BookingView
from gpubot.domain.model import Instance, Offer, OfferRequest
from gpubot.domain.notices import Notice

__all__ = [
    "Action",
    "AgentLaunch",
    "Clock",
    "Delivery",
    "Extendable",
    "Gate",
    "GpuReading",
    "LaunchSpec",
    "MachineStore",
    "NoticeChannel",
    "Notifier",
    "Pacer",
    "PageOutcome",
    "Pager",
    "Provider",
]

Clock = Callable[[], datetime]
Action = tuple[str, str, str]  # a button a person may press: (label, action id, value)


@dataclass(frozen=True)
class AgentLaunch:
    """How a machine gets gpubot's telemetry agent: download it from `download_url`, check it against `sha256`
    (hex), run it against `bot_url` with `token`, pushing every `interval` seconds."""

    bot_url: str
    download_url: str
    sha256: str
    token: str
    interval: float = 15.0

    def __repr__(self) -> str:
        return f"AgentLaunch(bot_url={self.bot_url!r}, sha256={self.sha256!r}, token=***)"


@dataclass(frozen=True)
class LaunchSpec:
    """What a launch needs besides the offer: the tag to carry, the user's own start command (from the
    policy), the telemetry agent to deliver (None: none), and the CUDA floor and image (container image,
    AutoDL image uuid or AMI) the booking asked for, None for the adapter's own. Adapters turn the start
    command and the agent into their platform's boot command with providers.startup. `owner` (the booking's
    Slack user) and `duration` (its booked time) are for a provider that holds GPUs for a person for a time (a
    Slurm job runs as the owner's cluster user, under a time limit); clouds ignore them."""

    booking_id: int
    name: str
    start_command: str | None = None
    ssh_public_key: str | None = None
    cuda: str | None = None
    image: str | None = None
    agent: AgentLaunch | None = None
    owner: str | None = None
    duration: timedelta | None = None


@dataclass(frozen=True)
class GpuReading:
    """One GPU's utilisation (%) and temperature (°C) at a moment; None where the GPU does not report it (the
    utilisation of a MIG-enabled GPU). `processes`: how many compute processes hold it, and their GPU memory;
    None when unknown (an agent that does not report them, a query that failed), never 0 for unknown."""

    index: int
    util: float | None
    temp_c: float | None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    processes: int | None = None
    process_mem_mib: float | None = None


@runtime_checkable
class Provider(Protocol):
    """A cloud that can run GPUs for us. The contract every adapter keeps:

    - `name` is the configured provider name (e.g. "lambda"), `kind` the adapter kind.
    - `offers(request)` returns what this provider could launch for the request, each with its price per
      GPU-hour in the provider's currency and `available` telling whether capacity is free now. It never
      launches anything. An empty list means "this provider does not sell that shape".
    - `launch(offer, spec)` starts one instance named `spec.name` (tagged where the vendor has tags) and
      returns it, possibly not ready yet. Vendor errors are raised as our ProviderError tree: NoCapacity
      (with its scope), QuotaExceeded, AuthFailed, RateLimited, InvalidRequest, Transient.
    - `describe(instance)` returns the instance's current state; `ready` is true once it can be reached.
      An instance the vendor no longer knows comes back with status "terminated".
    - Status "preempted" (`domain.spot.PREEMPTED`), from `describe` and `list_owned` alike, means the provider
      took the machine back without being asked (a spot interruption: Lambda's `preempted`, an EC2 spot
      instance stopped with `Server.SpotInstanceTermination`; GCP's preempted VMs alike). It is
      not "gone": `list_owned` keeps listing it while the vendor does, and `stopped_at` carries the moment
      when the vendor says. `terminate` on it is still safe (it cleans up what the vendor keeps).
    - `terminate(instance)` must be safe to call twice and must return quickly; a missing instance is
      success.
    - `list_owned()` returns every live (or preempted) instance this bot launched, found by its `gpubot-`
      name/tag, so that reconciliation can match them to bookings after a crash.
    - `telemetry(instance)` returns per-GPU readings, or an empty list when the provider has none.
    """

    name: str
    kind: str

    def offers(self, request: OfferRequest) -> list[Offer]: ...

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance: ...

    def describe(self, instance: Instance) -> Instance: ...

    def terminate(self, instance: Instance) -> None: ...

    def list_owned(self) -> list[Instance]: ...

    def telemetry(self, instance: Instance) -> list[GpuReading]: ...



@runtime_checkable
class Extendable(Protocol):
    """A provider that holds a machine for a set time and must be told when a booking is extended (a Slurm job's
    TimeLimit). `extend(instance, by)` lengthens the hold by `by` and returns the instance; a refusal is a
    ProviderError (PastTimeLimit past the longest hold it allows), and nothing is extended then."""

    def extend(self, instance: Instance, by: timedelta) -> Instance: ...

class MachineStore(Protocol):
    """Where in-process clouds keep their running machines when these must outlive the process (the demo: a
    restart keeps running bookings running), by provider name, each with its launch time (epoch seconds).
    Wiring passes one backed by the bot's database (gpubot/machines.py); tests and replays keep theirs in memory."""

    def load(self, provider: str) -> list[tuple[Instance, float]]:
        """Every machine `provider` runs, with when it was launched."""

    def save(self, instance: Instance, launched_at: float) -> None:
        """Remember a machine just launched."""

    def remove(self, provider: str, instance_id: str) -> None:
        """Forget a machine just terminated (a machine not remembered is no error)."""


Gate = tuple[str, float]  # a rate limit: (key, seconds between two turns under it)


class Pacer(Protocol):
    """Spaces calls to a rate-limited vendor API: under each gate (key, interval) one turn per `interval` seconds,
    for every caller that shares the pacer's state (one process, or every replica on one database)."""

    def wait_turn(self, *gates: Gate) -> None:
        """Block until a turn that keeps every gate: at least its `interval` after the previous turn under its key.

        One turn is booked under all the gates at once (a launch keeps Lambda's launch gate and its request gate
        with the same instant), so the call that follows goes out when every limit allows it."""


PageOutcome = Literal["accepted", "rejected", "failed"]


class Pager(Protocol):
    """On-call paging (PagerDuty): the outbox's second channel for alerts, next to Slack's alerts channel."""

    def page(self, kind: str, key: str, summary: str, severity: str = "error", resolve: bool = False
             ) -> PageOutcome:
        """Trigger (or resolve) the incident of dedup key `key`: "accepted"; "rejected" when the pager says the
        event can never be taken (do not send it again); "failed" when it may be taken later (send it again)."""


@dataclass(frozen=True)
class Delivery:
    """What a channel made of a notice: "accepted" (never send it again), "retry" (not now; after `retry_after`
    seconds when the channel said), "refused" (never: it can not be taken) or "unreachable" (never there: its
    channel is gone or closed to us, so the admins are owed it instead). `error` names why, never a secret;
    `maybe_sent` says a retry's call may have reached the channel all the same (it timed out)."""

    status: Literal["accepted", "retry", "refused", "unreachable"]
    retry_after: float | None = None
    error: str = ""
    maybe_sent: bool = False
    posted: tuple[str, str] | None = None  # a new booking's message: (channel, ts) where it now is


class NoticeChannel(Protocol):
    """A way a notice reaches people (Slack, PagerDuty, the demo console): the outbox's delivery worker hands it
    each owed notice, and marks it delivered only on "accepted"."""

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        """Render and send `notice`; the same notice delivered again must not show twice (a booking message is
        updated in place; `in_doubt`: an earlier hand-over may have sent it, so look before sending again).
        `booking` is the booking the notice speaks of as the worker read it with the claim: its message is drawn
        from it, never from text kept earlier."""


class Notifier(NoticeChannel, Protocol):
    """The team's chat (Slack; a recording one in tests), the outbox's main channel. It has one method, `deliver`:
    everything the engine tells people, the digest's chart too, is a notice owed through the outbox."""
