"""Progress steps in plain English for operators: the ledger's failure column, on-call summaries and logs.

People read a booking's progress in their own language, worded by the bot from the `ProgressStep` facts; this is
the one English wording the engine keeps, for what only operators read."""

from __future__ import annotations

from collections.abc import Iterable

from gpubot.domain.durations import format_duration
from gpubot.domain.notices import ProgressStep, StepKind

__all__ = ["OUTCOME_WORDS", "trail_text"]

OUTCOME_WORDS = {"no_capacity": "no capacity", "no_access": "no access to that pool", "rate_limited": "rate limited",
                 "quota": "quota exceeded", "auth": "credentials refused", "invalid": "request rejected"}


def trail_text(trail: Iterable[ProgressStep], sep: str = "; ") -> str:
    """The trail's steps in English, joined by `sep` (`lambda us-east-1: no capacity; aws us-west-2: launching…`)."""
    return sep.join(_step_text(step) for step in trail)


def _step_text(step: ProgressStep) -> str:
    where = f"{step.provider} {step.region}"
    ran = format_duration(step.elapsed) if step.elapsed is not None else "0s"
    words = {
        StepKind.LOOKING: "Looking for capacity…", StepKind.LAUNCHING: f"{where}: launching…",
        StepKind.OVER_BUDGET: f"{where}: over budget",
        StepKind.LAUNCH_FAILED: f"{where}: {OUTCOME_WORDS.get(step.outcome, 'error')}" + (
            f" ({step.detail})" if step.detail else ""),
        StepKind.BOOTING: (f"waiting in {where}'s queue ({step.outcome}), " + (
            f"expected to start {step.at:%Y-%m-%d %H:%M} UTC" if step.at is not None else
            f"expected to start in {format_duration(step.limit)}" if step.limit is not None
            else "expected start unknown") + f" · {ran}") if step.outcome else f"booting on {where} · {ran}",
        StepKind.READY: f"{where}: ready" + (f" after {ran}" if step.elapsed else ""),
        StepKind.BOOT_ABANDONED: _abandoned(step, where, ran),
        StepKind.CHEAPER: (f"waiting for {where} at {step.cost}/GPU-h (expected free in {ran}) rather than "
                           f"{step.other_provider} at {step.other_price}/GPU-h, until "
                           + (f"{step.at:%Y-%m-%d %H:%M} UTC" if step.at is not None else "?")),
    }
    return words.get(step.kind, step.text or step.kind.value)


def _abandoned(step: ProgressStep, where: str, ran: str) -> str:
    """A machine given up while it booted, and what of it was billed (nothing for a job that never left the queue
    of a provider that bills nothing while queued)."""
    limit = format_duration(step.limit) if step.limit else ran
    billed = f"its {ran} are billed" if step.elapsed else "nothing was billed"
    if step.outcome == "vanished":
        return f"{where} dropped the machine while it was booting; {billed}" if step.elapsed else \
            f"{where} dropped the job before it started; nothing was billed"
    if step.outcome in ("burst", "queue_timeout") or not step.elapsed:
        return f"{where} still had the job in its queue after {limit}; it was cancelled ({billed})"
    return f"{where} was not reachable after {limit}; it was terminated (its {ran} of booting are billed)"
