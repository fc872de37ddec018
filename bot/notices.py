"""Renderers: one per notice, the engine's facts worded for Slack in the reader's language.

`render(notice, tr)` gives the message to send (a DM, a channel post or an alert) and, for a notice that also
changes a booking's message, the line that message shows. Every sentence goes through `tr.gettext` /
`tr.ngettext` with `{name}` placeholders filled after translation, so the catalogs can be extracted from here.
The renderers are grouped as domain.notices groups the notices: a booking's life (bot.booking_notices), a running
machine (bot.running_notices), money (bot.money_notices), and here watches and on-call alerts. They (and
bot.booking_quote, bot.digest) are the only places where user-supplied text (projects, notes, names, reasons) is
escaped (views.escape), and where a notice's actions become Slack action ids.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubot.bot.booking_notices import BOOKING_RENDERERS
from gpubot.bot.i18n import Translator, duration_for, money_for
from gpubot.bot.money_notices import MONEY_RENDERERS
from gpubot.bot.rendered import ACTION_IDS, Rendered, Upload, buttons, gpus, say
from gpubot.bot.running_notices import RUNNING_RENDERERS
from gpubot.bot.views import actions_message, escape
from gpubot.domain import notices as n
from gpubot.domain.notices import Notice

__all__ = ["ACTION_IDS", "Rendered", "Upload", "escape", "render"]


def _watch(notice: n.WatchFired, tr: Translator) -> Rendered:
    text = tr.gettext("👀 Watch #{watch}: {gpus} is free on {provider} {region} at {price}/GPU-h ({hourly}/h). Book "
                      "now takes exactly this offer for {duration}; or `/gpu book {shape} --provider {provider} "
                      "--region {region}`. This watch has ended.").format(
        watch=notice.watch_id, gpus=gpus(notice), provider=escape(notice.provider), region=escape(notice.region),
        price=money_for(tr, notice.price, notice.currency),
        hourly=money_for(tr, notice.price * notice.count, notice.currency),
        duration=duration_for(tr, notice.duration), shape=escape(f"{notice.gpu}x{notice.count}"))
    return Rendered(actions_message(text, buttons(notice, tr, str(notice.watch_id))))


def _watch_ended(notice: n.WatchEnded, tr: Translator) -> Rendered:
    return say(tr.gettext("Watch #{watch} ({gpus}) ended: no capacity appeared in {watched}.").format(
        watch=notice.watch_id, gpus=gpus(notice), watched=duration_for(tr, notice.watched_for)))


def _alert(notice: n.ProviderAlert, tr: Translator) -> Rendered:
    closed = notice.resolve or notice.closed
    prefix = tr.gettext("✅ Resolved") if closed else ("🚨" if notice.severity == "error" else "⚠️")
    text = f"{prefix} [{escape(notice.kind)}] {escape(notice.summary)}"
    if notice.owner:
        text += " " + tr.gettext("(owner <@{owner}>)").format(owner=escape(notice.owner))
    if notice.folded:  # crossings past the hourly page cap: counted here, never paged or posted again
        text += "\n" + tr.ngettext(
            "🔁 Crossed the limit {count} more time since, folded into this alert (not paged); latest: GPU {gpu} "
            "at {value} at {at} UTC.", "🔁 Crossed the limit {count} more times since, folded into this alert "
            "(not paged); latest: GPU {gpu} at {value} at {at} UTC.", notice.folded).format(
            count=notice.folded, gpu=notice.latest_gpu, at=f"{notice.latest_at:%H:%M:%S}" if notice.latest_at else "?",
            value="?" if notice.latest_value is None else f"{notice.latest_value:.0f} °C")
    offered = buttons(notice, tr, str(notice.replace))
    return Rendered(actions_message(text, offered)) if offered else say(text)


_RENDERERS: dict[type, Callable[..., Rendered]] = {
    **BOOKING_RENDERERS, **RUNNING_RENDERERS, **MONEY_RENDERERS,
    n.WatchFired: _watch, n.WatchEnded: _watch_ended, n.ProviderAlert: _alert,
}


def render(notice: Notice, tr: Translator) -> Rendered:
    """The notice worded for Slack in `tr`'s language."""
    return _RENDERERS[type(notice)](notice, tr)
