"""Renderers of the notices about a running machine: the expiry warning, idle reminders and what answers them,
telemetry gone quiet or unreadable, and an overheating GPU."""

from __future__ import annotations

from collections.abc import Callable

from gpubot.bot.i18n import Translator, duration_for, money_for, sentences
from gpubot.bot.rendered import Rendered, buttons, gpus, label, say
from gpubot.bot.times import moment_for
from gpubot.bot.views import actions_message, escape
from gpubot.domain import notices as n

__all__ = ["RUNNING_RENDERERS"]


def _expiry(notice: n.ExpiryWarning, tr: Translator) -> Rendered:
    text = tr.gettext("⏰ {label} ({gpus}) ends in {left} (at {end}). Extend it to keep working, or save your "
                      "work.").format(label=label(notice), gpus=gpus(notice),
                                      left=duration_for(tr, notice.left),
                                      end=moment_for(tr, notice.ends_at, date=False))
    return Rendered(actions_message(text, buttons(notice, tr, notice.version or str(notice.booking_id))))


def _idle(notice: n.IdleReminder, tr: Translator) -> Rendered:
    if notice.no_process:
        said = tr.gettext("No program has used {label} ({gpus} on {provider}) for {idle}: your job seems to have "
                          "finished. It costs {hourly}/h.")
    else:
        said = tr.gettext("{label} ({gpus} on {provider}) has been idle for {idle}, costing {hourly}/h.")
    text = said.format(label=label(notice), gpus=gpus(notice), provider=escape(notice.provider),
                       idle=duration_for(tr, notice.idle_for), hourly=money_for(tr, notice.hourly, notice.currency))
    if notice.release_in is not None:
        text = sentences(text, tr.gettext("It will be released in {grace} unless you keep it.").format(
            grace=duration_for(tr, notice.release_in)))
    return Rendered(actions_message(text, buttons(notice, tr, str(notice.booking_id))))


def _reclaimed(notice: n.IdleReclaimed, tr: Translator) -> Rendered:
    return say(tr.gettext("{label} was released because its GPUs were idle; that saved about {saved} of its "
                           "booked time.").format(label=label(notice),
                                                  saved=money_for(tr, notice.saved, notice.currency)))


def _kept(notice: n.IdleKept, tr: Translator) -> Rendered:
    return say(tr.gettext("{label} kept: no more idle reminders for this idle stretch.").format(
        label=label(notice)))


def _snoozed(notice: n.IdleSnoozed, tr: Translator) -> Rendered:
    return say(tr.gettext("{label}: idle checks snoozed until {time}.").format(
        label=label(notice), time=moment_for(tr, notice.until, date=False)))


def _util_unknown(notice: n.UtilisationUnknown, tr: Translator) -> Rendered:
    return say(tr.ngettext("{label}: GPU {gpus} reports no utilisation (MIG is enabled on it), so gpubot cannot tell "
                           "whether it is idle and will remind you of the booking only once no program uses its GPUs "
                           "(a finished job); its temperature is still watched.",
                           "{label}: GPUs {gpus} report no utilisation (MIG is enabled on them), so gpubot cannot "
                           "tell whether they are idle and will remind you of the booking only once no program uses "
                           "its GPUs (a finished job); their temperature is still watched.",
                           len(notice.gpu_indexes)).format(
        label=label(notice), gpus=", ".join(str(i) for i in notice.gpu_indexes)))


def _stale(notice: n.TelemetryStale, tr: Translator) -> Rendered:
    text = tr.gettext("{label} has sent no GPU telemetry for {silent}, so idle and temperature checks are "
                      "paused for it. Is the gpubot agent running?").format(
        label=label(notice), silent=duration_for(tr, notice.silent_for))
    if notice.agent_command:  # escaped as Slack asks; its client shows (and copies) `2>&1` as typed
        text += "\n" + tr.gettext("If it is not, this line on the machine downloads it, checks its SHA-256 and starts "
                                  "it: `{command}`").format(command=escape(notice.agent_command))
    return say(text)


def _overheat(notice: n.Overheat, tr: Translator) -> Rendered:
    util = tr.gettext("util unknown (MIG)") if notice.util is None else tr.gettext("util {util} %").format(
        util=f"{notice.util:.0f}")
    text = tr.gettext("🔥 {label} GPU {index} is at {temp} °C (limit {limit} °C) on {provider} {region} ({instance}), "
                      "{util}. On-call has been paged. Consider saving a checkpoint; Replace books the same "
                      "GPUs elsewhere and releases these once the new ones run.").format(
        label=label(notice), index=notice.gpu_index, temp=f"{notice.temp_c:.0f}", limit=f"{notice.limit_c:.0f}",
        provider=escape(notice.provider), region=escape(notice.region), instance=escape(notice.instance),
        util=util)
    return Rendered(actions_message(text, buttons(notice, tr, str(notice.booking_id))))


RUNNING_RENDERERS: dict[type, Callable[..., Rendered]] = {
    n.ExpiryWarning: _expiry, n.IdleReminder: _idle, n.IdleReclaimed: _reclaimed, n.IdleKept: _kept,
    n.IdleSnoozed: _snoozed, n.UtilisationUnknown: _util_unknown, n.TelemetryStale: _stale, n.Overheat: _overheat,
}
