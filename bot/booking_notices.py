"""Renderers of the notices along a booking's life: requested, progress, queued, ready, boot abandoned, fallen back
from spot, interrupted, extended, cancelled, given up and released (most also give the booking message's line)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from gpubot.bot.booking_quote import STATE_LINES
from gpubot.bot.i18n import N_, Translator, duration_for, money_for, sentences
from gpubot.bot.progress_lines import progress_line, step_text, trail_text
from gpubot.bot.rendered import ACTION_IDS, Rendered, gpus, label, say
from gpubot.bot.times import moment_for
from gpubot.bot.views import actions_message, escape, section_message
from gpubot.domain import notices as n
from gpubot.domain.notices import NoticeAction

__all__ = ["BOOKING_RENDERERS"]


_RELEASE_WHY = {
    n.ReleaseWhy.EXPIRED: N_("its time was up"),
    n.ReleaseWhy.EXPIRED_BOOTING: N_("its time was up before the machine became reachable"),
    n.ReleaseWhy.RESTARTED: N_("release completed after a restart"),
    n.ReleaseWhy.LOST: N_("the provider no longer runs it"), n.ReleaseWhy.STOPPED: N_("the provider had already "
                                                                                     "stopped it"),
    n.ReleaseWhy.RETRIED: N_("retry"),
}
_BY_SOMEONE = {n.ReleaseWhy.RELEASED: (N_("released by its owner"), N_("released by <@{who}>")),
               n.ReleaseWhy.CANCELLED_BOOTING: (N_("cancelled while booting by its owner"),
                                                N_("cancelled while booting by <@{who}>"))}


def _release_reason(notice: n.BookingReleased, tr: Translator) -> str:
    """Why the booking ended, in the reader's language (a row owed before `why` was kept has English `reason`)."""
    if notice.why in _BY_SOMEONE:
        by_owner, by_someone = _BY_SOMEONE[n.ReleaseWhy(notice.why)]
        return tr.gettext(by_someone).format(who=escape(notice.by)) if notice.by else tr.gettext(by_owner)
    if notice.why == n.ReleaseWhy.IDLE:
        return tr.gettext("idle for {idle}").format(idle=duration_for(tr, notice.idle_for or timedelta(0)))
    if notice.why == n.ReleaseWhy.REPLACED:
        return tr.gettext("replaced by #{replacement}").format(replacement=notice.replaced_by)
    if notice.why in _RELEASE_WHY:
        return tr.gettext(_RELEASE_WHY[n.ReleaseWhy(notice.why)])
    return tr.gettext("{reason} by <@{who}>").format(reason=escape(notice.reason), who=escape(notice.by)) \
        if notice.by else escape(notice.reason)


def _released(notice: n.BookingReleased, tr: Translator) -> Rendered:
    reason = _release_reason(notice, tr)
    values = {"label": label(notice), "reason": reason, "ran": duration_for(tr, notice.ran),
              "cost": money_for(tr, notice.cost, notice.currency)}
    return Rendered(section_message(tr.gettext("{label} released ({reason}) after {ran}. Cost: {cost}.").format(
        **values)), tr.gettext("Released ({reason}) after {ran}; it cost {cost}.").format(**values))


def _requested(notice: n.BookingRequested, tr: Translator) -> Rendered:
    """The line of a new booking's message as booked (the message itself is drawn from the booking: booking_quote)."""
    state = STATE_LINES.get(notice.state)
    return Rendered(None, tr.gettext(state) if state else None)


def _extended(notice: n.BookingExtended, tr: Translator) -> Rendered:
    values = {"by": duration_for(tr, notice.by), "length": duration_for(tr, notice.length),
              "time": moment_for(tr, notice.ends_at)}
    if notice.by_whom:
        return Rendered(None, tr.gettext("Extended by {by} by <@{who}>: it ends {time}, {length} in all.").format(
            who=escape(notice.by_whom), **values))
    return Rendered(None, tr.gettext("Extended by {by}: it ends {time}, {length} in all.").format(**values))


def _cancelled(notice: n.BookingCancelled, tr: Translator) -> Rendered:
    if notice.by:
        return Rendered(None, tr.gettext("Cancelled by <@{who}> before it started; nothing was billed.").format(
            who=escape(notice.by)))
    return Rendered(None, tr.gettext("Cancelled before it started; nothing was billed."))


def _progress(notice: n.BookingProgress, tr: Translator) -> Rendered:
    return Rendered(None, progress_line(notice, tr))


def _ready(notice: n.BookingReady, tr: Translator) -> Rendered:
    values = {"label": label(notice), "gpus": gpus(notice), "provider": escape(notice.provider),
              "region": escape(notice.region), "connect": escape(notice.connect)}
    booted = notice.ready_at - notice.started_at if notice.started_at and notice.ready_at else None
    if booted and booted.total_seconds() > 0:
        text = tr.gettext("{label} is ready: {gpus} on {provider} {region} (it booted in {booted}). Connect with "
                          "`{connect}`").format(booted=duration_for(tr, booted), **values)
    else:
        text = tr.gettext("{label} is ready: {gpus} on {provider} {region}. Connect with `{connect}`").format(**values)
    return Rendered(actions_message(text + "".join(f"\n{line}" for line in _ready_extras(notice, tr)),
                                    _release_replaced(notice, tr)))


def _ready_extras(notice: n.BookingReady, tr: Translator) -> list[str]:
    """Telemetry on its way, the advice on another shape, the booking it replaces, the spot reminder."""
    extras = []
    if notice.telemetry_wait:  # the agent's line comes only if nothing arrives (TelemetryStale)
        extras.append(tr.gettext("GPU telemetry (for idle and temperature checks) is on its way from the agent the "
                                 "machine starts by itself; if none arrives within {wait}, you get the line to start "
                                 "it by hand.").format(wait=duration_for(tr, notice.telemetry_wait)))
    extras += [step_text(note, tr) for note in notice.notes]
    if notice.advice:  # a DM owed before its advice was facts
        extras.append(escape(notice.advice))
    if notice.replaces:
        extras.append(tr.gettext("It replaces #{replaced}, which is released when you click Release on it, or by "
                                 "itself {grace} after this one became reachable.").format(
            replaced=notice.replaces, grace=duration_for(tr, notice.replace_grace or timedelta(0))))
    if notice.spot:
        extras.append(tr.gettext("spot: the provider may take it back at any time; save checkpoints."))
    return extras


def _release_replaced(notice: n.BookingReady, tr: Translator) -> list[tuple[str, str, str]]:
    return [(tr.gettext("Release #{replaced}").format(replaced=notice.replaces), ACTION_IDS[
        NoticeAction.RELEASE_REPLACED], str(notice.replaces))] if notice.replaces else []


def _boot_abandoned(notice: n.BootAbandoned, tr: Translator) -> Rendered:
    values = {"label": label(notice), "provider": escape(notice.provider), "region": escape(notice.region),
              "ran": duration_for(tr, notice.ran), "limit": duration_for(tr, notice.limit)}
    if not notice.ran and notice.outcome == "vanished":  # never left a queue that bills nothing (Slurm)
        text = tr.gettext("{label}: {provider} {region} dropped the job before it started; nothing was billed. Trying "
                          "the next offer.").format(**values)
    elif not notice.ran:
        text = tr.gettext("{label}: {provider} {region} still had the job in its queue after {limit}; it was cancelled "
                          "(nothing was billed). Trying the next offer.").format(**values)
    elif notice.outcome == "vanished":
        text = tr.gettext("{label}: {provider} {region} dropped the machine while it was booting; its {ran} are "
                          "billed. Trying the next offer.").format(**values)
    elif notice.outcome in ("burst", "queue_timeout"):
        text = tr.gettext("{label}: {provider} {region} still had the job in its queue after {limit}; it was "
                          "cancelled (its {ran} are billed). Trying the next offer.").format(**values)
    else:
        text = tr.gettext("{label}: {provider} {region} was not reachable after {limit}; it was terminated (its {ran} "
                          "of booting are billed). Trying the next offer.").format(**values)
    return say(text)


def _interrupted(notice: n.BookingInterrupted, tr: Translator) -> Rendered:
    values = {"label": label(notice), "provider": escape(notice.provider), "gpus": gpus(notice),
              "ran": duration_for(tr, notice.ran), "cost": money_for(tr, notice.cost, notice.currency),
              "remaining": duration_for(tr, notice.remaining), "resumed": f"#{notice.resumed}"}
    if notice.spot:
        text = tr.gettext("{label} was interrupted: {provider} took back its spot machine ({gpus}) after {ran}.")
    else:
        text = tr.gettext("{label} was interrupted: {provider} took back its machine ({gpus}) after {ran}.")
    text = sentences(text.format(**values), tr.gettext("It cost {cost} so far; billing stopped there.").format(
        **values))
    if notice.resumed is not None:
        then = tr.gettext("{resumed} resumes it for the remaining {remaining}. I will DM you when it is ready; resume "
                           "your work from its last checkpoint.").format(**values)
    elif notice.then == "nothing_left":
        then = tr.gettext("Only {remaining} of it was left, so it has ended.").format(**values)
    else:
        then = tr.gettext('It has ended ([spot] on_preempt = "notify").')
    return say(sentences(text, then))


def _spot_fell_back(notice: n.SpotFellBack, tr: Translator) -> Rendered:
    values = {"label": label(notice), "gpus": gpus(notice), "waited": duration_for(tr, notice.waited),
              "after": duration_for(tr, notice.after), "provider": escape(notice.provider),
              "region": escape(notice.region), "price": money_for(tr, notice.price, notice.currency),
              "hourly": money_for(tr, notice.price * notice.count, notice.currency)}
    return say(tr.gettext("{label} found no spot capacity for {gpus} in {waited} (the limit is {after}), so it "
                          "launched on demand on {provider} {region} at {price} per GPU-hour ({hourly}/h), billed at "
                          "that price. On-demand machines are not taken back.").format(**values))


def _queued(notice: n.BookingQueued, tr: Translator) -> Rendered:
    trail = " → ".join(escape(step) for step in notice.trail)
    return Rendered(None, tr.gettext("Queued: {trail}. Retrying automatically.").format(trail=trail))


def _gave_up(notice: n.BookingGaveUp, tr: Translator) -> Rendered:
    trail = trail_text(notice.trail, tr) or tr.gettext("no offer matched")
    return Rendered(section_message(tr.gettext("{label} could not be placed and was given up: {trail}").format(
        label=label(notice), trail=trail)), tr.gettext("Gave up: {trail}").format(trail=trail))


BOOKING_RENDERERS: dict[type, Callable[..., Rendered]] = {
    n.BookingRequested: _requested, n.BookingProgress: _progress, n.BookingQueued: _queued, n.BookingReady: _ready,
    n.BootAbandoned: _boot_abandoned, n.SpotFellBack: _spot_fell_back, n.BookingInterrupted: _interrupted,
    n.BookingExtended: _extended, n.BookingCancelled: _cancelled, n.BookingGaveUp: _gave_up,
    n.BookingReleased: _released,
}
