"""Progress lines: a booking's progress steps (domain.notices.ProgressStep) worded in the reader's language.

The booking message shows the trail of steps joined by arrows (`lambda us-east-1: no capacity → aws us-west-2:
launching…`), `Queued: … Retrying automatically.` when the round ended in the queue, and its notes (the expected
wait, advice on the shape it landed on) on lines of their own. Provider and region names are the vendors' words:
they are escaped here like any other text from outside."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal

from gpubot.bot.i18n import N_, Translator, duration_for, money_for, sentences
from gpubot.bot.times import moment_for
from gpubot.domain.advice import total_memory_gib
from gpubot.domain.catalog import GPUS
from gpubot.domain.notices import BookingProgress, ProgressStep, StepKind

__all__ = ["OUTCOMES", "progress_line", "step_text", "trail_text"]

OUTCOMES = {"no_capacity": N_("no capacity"), "no_access": N_("no access to that pool"),
            "rate_limited": N_("rate limited"), "quota": N_("quota exceeded"), "auth": N_("credentials refused"),
            "invalid": N_("request rejected")}
UNKNOWN_OUTCOME = N_("error")  # a ProviderError of no known kind; at module level, where pybabel extracts it


def progress_line(notice: BookingProgress, tr: Translator) -> str:
    """What the booking message shows for `notice`: its trail (queued or not), then its notes."""
    trail = trail_text(notice.trail, tr)
    if notice.queued:
        trail = tr.gettext("Queued: {trail}. Retrying automatically.").format(
            trail=trail or tr.gettext("no offer matched"))
    return "\n".join([trail, *(step_text(note, tr) for note in notice.notes)])


def trail_text(trail: Iterable[ProgressStep], tr: Translator) -> str:
    """The steps worded and joined by arrows."""
    return " → ".join(step_text(step, tr) for step in trail)


def step_text(step: ProgressStep, tr: Translator) -> str:
    """One step in the reader's language."""
    return _WORDERS.get(step.kind, _text)(step, tr)


def _escape(text: str) -> str:
    """Slack's three control characters escaped (no mention, no link); backticks kept for `--night`."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _where(step: ProgressStep) -> dict[str, str]:
    return {"provider": _escape(step.provider), "region": _escape(step.region)}


def _duration(value: timedelta | None, tr: Translator) -> str:
    return duration_for(tr, value or timedelta(0))


def _looking(step: ProgressStep, tr: Translator) -> str:
    return tr.gettext("Looking for capacity…")


def _launching(step: ProgressStep, tr: Translator) -> str:
    return tr.gettext("{provider} {region}: launching…").format(**_where(step))


def _over_budget(step: ProgressStep, tr: Translator) -> str:
    return tr.gettext("{provider} {region}: over budget").format(**_where(step))


def _launch_failed(step: ProgressStep, tr: Translator) -> str:
    if step.outcome == "image_refused":  # a booking's --image from an owner or project the provider does not allow
        allowed = _escape(tr.gettext(", ").join(step.allowed))
        if step.then == "projects":
            return tr.gettext("{provider} {region}: image {image} refused: only images of the projects {allowed} "
                              "may boot there").format(image=_escape(step.detail), allowed=allowed, **_where(step))
        return tr.gettext("{provider} {region}: image {image} refused: only AMIs owned by {allowed} may boot "
                          "there").format(image=_escape(step.detail), allowed=allowed, **_where(step))
    outcome = tr.gettext(OUTCOMES.get(step.outcome, UNKNOWN_OUTCOME))
    if step.detail:  # the provider's own words for an error of no known kind
        return tr.gettext("{provider} {region}: {outcome} ({detail})").format(
            outcome=outcome, detail=_escape(step.detail), **_where(step))
    return tr.gettext("{provider} {region}: {outcome}").format(outcome=outcome, **_where(step))


def _booting(step: ProgressStep, tr: Translator) -> str:
    """Booting, or waiting in the provider's own queue (a pending Slurm job): its reason and expected start as the
    provider said them (`squeue --start`), or unknown when it gave none."""
    values = {"reason": _escape(step.outcome), "elapsed": _duration(step.elapsed, tr), **_where(step)}
    if step.outcome and step.at is not None:
        return tr.gettext("waiting in {provider} {region}'s queue ({reason}), expected to start {time} (in "
                          "{wait}) · {elapsed}").format(time=moment_for(tr, step.at),
                                                        wait=_duration(step.limit, tr), **values)
    if step.outcome and step.limit is not None:  # a step owed before it carried the start time
        return tr.gettext("waiting in {provider} {region}'s queue ({reason}), expected to start in {wait} · "
                          "{elapsed}").format(wait=_duration(step.limit, tr), **values)
    if step.outcome:
        return tr.gettext("waiting in {provider} {region}'s queue ({reason}), expected start unknown · "
                          "{elapsed}").format(**values)
    return tr.gettext("booting on {provider} {region} · {elapsed}").format(elapsed=_duration(step.elapsed, tr),
                                                                           **_where(step))


def _ready(step: ProgressStep, tr: Translator) -> str:
    if not step.elapsed:
        return tr.gettext("{provider} {region}: ready").format(**_where(step))
    if not step.checks:
        return tr.gettext("{provider} {region}: ready after {elapsed}").format(elapsed=_duration(step.elapsed, tr),
                                                                              **_where(step))
    return tr.ngettext("{provider} {region}: ready after {elapsed} ({checks} check)",
                       "{provider} {region}: ready after {elapsed} ({checks} checks)", step.checks).format(
        elapsed=_duration(step.elapsed, tr), checks=step.checks, **_where(step))


def _boot_abandoned(step: ProgressStep, tr: Translator) -> str:
    values = {"ran": _duration(step.elapsed, tr), "limit": _duration(step.limit, tr), **_where(step)}
    if not step.elapsed:  # a job that never left the queue of a provider that bills nothing while queued
        return _abandoned_unbilled(step, tr).format(**values)
    if step.outcome == "vanished":
        return tr.gettext("{provider} {region} dropped the machine while it was booting; its {ran} are billed").format(
            **values)
    if step.outcome in ("burst", "queue_timeout"):
        return tr.gettext("{provider} {region} still had the job in its queue after {limit}; it was cancelled (its "
                          "{ran} are billed)").format(**values)
    return tr.gettext("{provider} {region} was not reachable after {limit}; it was terminated (its {ran} of booting "
                      "are billed)").format(**values)


def _abandoned_unbilled(step: ProgressStep, tr: Translator) -> str:
    if step.outcome == "vanished":
        return tr.gettext("{provider} {region} dropped the job before it started; nothing was billed")
    return tr.gettext("{provider} {region} still had the job in its queue after {limit}; it was cancelled "
                      "(nothing was billed)")


def _short(value: timedelta, tr: Translator) -> str:
    minutes = value // timedelta(minutes=1)
    return tr.gettext("under 1m") if minutes < 1 else duration_for(tr, timedelta(minutes=minutes))


def _wait(step: ProgressStep, tr: Translator) -> str:
    values = {"what": _escape(step.gpu), "days": step.days, "samples": step.samples}
    if step.elapsed is None:
        text = tr.gettext("No {what} was acquired at this hour in the last {days} days.").format(**values)
    else:
        text = tr.gettext("Expected wait for {what} at this hour: {wait} (median of {samples} in the last {days} "
                          "days).").format(wait=_short(step.elapsed, tr), **values)
    if step.suggest_night and step.night is not None:
        text = sentences(text, tr.gettext("At night it was {wait} (median of {samples}): consider `--night`.").format(
            wait=_short(step.night, tr), samples=step.night_samples))
    return text


def _held(step: ProgressStep, tr: Translator) -> str:
    half = timedelta(seconds=30)  # to the nearest minute: a booking 6h long, a few seconds in, ends "in 6h"
    values = {"what": _escape(step.gpu), "holders": step.count, "position": step.other or 1,
              "wait": _short((step.elapsed or timedelta(0)) + half, tr)}
    if step.at_least:
        text = tr.ngettext(
            "{what} is held by {holders} running booking: it ends in {wait}, and even that frees fewer GPUs than the "
            "queue needs; this booking is number {position} in the queue.",
            "{what} is held by {holders} running bookings: the last of them ends in {wait}, and even that frees fewer "
            "GPUs than the queue needs; this booking is number {position} in the queue.", step.count).format(**values)
    else:
        text = tr.ngettext(
            "{what} is held by {holders} running booking: it ends in {wait}; this booking is number {position} in the "
            "queue.",
            "{what} is held by {holders} running bookings: enough of them end in {wait}; this booking is number "
            "{position} in the queue.", step.count).format(**values)
    if step.too_late:
        text = sentences(text, tr.gettext("That is after this booking gives up waiting (in {limit}, "
                                          "acquire.give_up_after).").format(
            limit=_short((step.limit or timedelta(0)) + half, tr)))
    return text


def _shape(gpu: str, count: int) -> str:
    model = GPUS.get(gpu)
    return _escape(f"{count}× {model.display if model else gpu}")


def _advice(step: ProgressStep, tr: Translator) -> str:
    want, got = total_memory_gib(step.wanted_gpu, step.wanted_count), total_memory_gib(step.gpu, step.count)
    head = tr.gettext("Landed on {landed} ({got} GiB) instead of your first choice {wanted} ({want} GiB).").format(
        landed=_shape(step.gpu, step.count), got=got, wanted=_shape(step.wanted_gpu, step.wanted_count), want=want)
    if not want or not got:
        return sentences(head, tr.gettext("Check that your run fits its memory."))
    if got < want:
        steps = math.ceil(want / got)
        return sentences(head, tr.gettext(
            "It has {ratio}× less GPU memory: use mixed precision (bf16/fp16) and gradient accumulation over {steps} "
            "steps (per-step batch ÷ {steps}) to keep the effective batch size.").format(
            ratio=f"{want / got:.2g}", steps=steps))
    if step.count < step.wanted_count:
        steps = math.ceil(step.wanted_count / step.count)
        return sentences(head, tr.gettext(
            "Fewer GPUs with as much memory: raise the per-GPU batch ×{steps} or accumulate gradients over {steps} "
            "steps to keep the effective batch size; mixed precision (bf16) makes up some of the lost "
            "throughput.").format(steps=steps))
    return sentences(head, tr.gettext("As much GPU memory or more: your batch settings carry over; throughput will "
                                       "differ."))


def _cheaper(step: ProgressStep, tr: Translator) -> str:
    """A booking that lets a dearer free offer go and waits for a cheaper one expected free soon (acquire.
    wait_for_cheaper): what it waits for, at what price, what it could take now, and until when."""
    currency = step.currency or "USD"
    return tr.gettext(
        "waiting for {provider} {region} at {price}/GPU-h, expected free in {wait}, rather than {other} at "
        "{other_price}/GPU-h now; if it is not free by {time} (acquire.wait_for_cheaper), this booking takes the "
        "best offer free then").format(
        price=money_for(tr, step.cost or Decimal(0), currency), wait=_short(step.elapsed or timedelta(0), tr),
        other=_escape(step.other_provider), other_price=money_for(tr, step.other_price or Decimal(0), currency),
        time=moment_for(tr, step.at), **_where(step))


def _interrupted(step: ProgressStep, tr: Translator) -> str:
    values = {"provider": _escape(step.provider), "ran": _duration(step.elapsed, tr),
              "cost": money_for(tr, step.cost or Decimal(0), step.currency or "USD"),
              "remaining": _duration(step.limit, tr), "resumed": f"#{step.other}"}
    text = tr.gettext("Interrupted: {provider} took the machine back after {ran}; it cost {cost}.").format(**values)
    if step.other is not None:
        return sentences(text, tr.gettext("{resumed} resumes it for the remaining {remaining}.").format(**values))
    if step.then == "nothing_left":
        return sentences(text, tr.gettext("Only {remaining} of it was left, so it has ended.").format(**values))
    return sentences(text, tr.gettext('It has ended ([spot] on_preempt = "notify").'))


def _resumes(step: ProgressStep, tr: Translator) -> str:
    return tr.gettext("Resumes {interrupted}, which {provider} interrupted: queued for the remaining "
                      "{remaining}.").format(interrupted=f"#{step.other}", provider=_escape(step.provider),
                                             remaining=_duration(step.limit, tr))


def _recovered(step: ProgressStep, tr: Translator) -> str:
    return tr.gettext("Recovered after a restart: the instance was launched; checking whether it is reachable.")


def _requeued(step: ProgressStep, tr: Translator) -> str:
    return tr.gettext("Interrupted while acquiring; queued to try again.")


_REPLACEMENT_ENDED = {
    "failed": N_("Its replacement {replacement} was given up; this booking runs on."),
    "cancelled": N_("Its replacement {replacement} was cancelled; this booking runs on."),
    "released": N_("Its replacement {replacement} has ended; this booking runs on."),
}


def _replacing(step: ProgressStep, tr: Translator) -> str:
    if ended := _REPLACEMENT_ENDED.get(step.then):  # it ended before it could release this one
        return tr.gettext(ended).format(replacement=f"#{step.other}")
    if step.provider:
        return tr.gettext("Its replacement {replacement} runs on {provider} {region}.").format(
            replacement=f"#{step.other}", **_where(step))
    return tr.gettext("Its replacement {replacement} is looking for capacity elsewhere…").format(
        replacement=f"#{step.other}")


def _text(step: ProgressStep, tr: Translator) -> str:
    """A line worded in English before progress was data (owed before an upgrade): shown as it was."""
    return _escape(step.text)


_WORDERS = {
    StepKind.LOOKING: _looking, StepKind.LAUNCHING: _launching, StepKind.OVER_BUDGET: _over_budget,
    StepKind.LAUNCH_FAILED: _launch_failed, StepKind.BOOTING: _booting, StepKind.READY: _ready,
    StepKind.BOOT_ABANDONED: _boot_abandoned, StepKind.WAIT: _wait, StepKind.HELD: _held, StepKind.ADVICE: _advice,
    StepKind.CHEAPER: _cheaper,
    StepKind.INTERRUPTED: _interrupted, StepKind.RESUMES: _resumes, StepKind.RECOVERED: _recovered,
    StepKind.REQUEUED: _requeued, StepKind.REPLACING: _replacing, StepKind.TEXT: _text,
}
