"""The booking modal: `/gpu book` with no arguments opens it; a live quote follows the choices.

Slack's trigger_id lives 3 seconds, and probing every cloud for a quote can take longer (a slow provider has
`acquire.probe_timeout`). So the modal opens at once with a "looking up prices" line, before any provider is
asked, and the quote is filled in afterwards with views.update, carrying a hash so that Slack refuses it
(`hash_conflict`) if the app updated the modal meanwhile. A person's picks do not change the hash (only the app's
updates do), so every pick is remembered (bot.modal_state): a quote is shown only while its choices are still the
latest ones (a newer pick's own quote follows), and a conflicted quote for the latest choices is sent again with
the hash of the app's latest update, so the modal always ends showing the quote of what is selected."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from datetime import timedelta

from gpubot.bot.booking_replies import on_book
from gpubot.bot.context import BotContext
from gpubot.bot.i18n import ENGLISH, Translator, money_for
from gpubot.bot.replies import user_error_text
from gpubot.bot.views import gpu_name
from gpubot.domain import grammar
from gpubot.domain.catalog import GPUS
from gpubot.domain.errors import UserError
from gpubot.domain.model import OfferRequest
from gpubot.scheduling.booking.quotes import quote
from slack_bolt import App
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import (
    InputBlock,
    Option,
    PlainTextInputElement,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

__all__ = ["book_modal", "open_book_modal", "register"]

log = logging.getLogger(__name__)

CALLBACK = "gpu_book_modal"
_COUNTS = ["1", "2", "4", "8"]


def _select(action_id: str, options: list[tuple[str, str]], initial: str) -> StaticSelectElement:
    opts = [Option(text=label, value=value) for value, label in options]
    chosen = next(o for o in opts if o.value == initial)
    return StaticSelectElement(action_id=action_id, options=opts, initial_option=chosen)


def book_modal(gpu: str = "a100", count: str = "1", duration: str = "4h", project: str = "",
               quote_text: str | None = None, tr: Translator = ENGLISH) -> View:
    """The booking modal with the given choices and quote line, in the reader's language."""
    gpus = [(key, model.display) for key, model in GPUS.items()]
    return View(type="modal", callback_id=CALLBACK, title=tr.gettext("Book GPUs"), submit=tr.gettext("Book"),
                close=tr.gettext("Cancel"), private_metadata=json.dumps({"gpu": gpu, "count": count}), blocks=[
                    InputBlock(block_id="gpu", label=tr.gettext("GPU type"), dispatch_action=True,
                               element=_select("gpu_pick", gpus, gpu)),
                    InputBlock(block_id="count", label=tr.gettext("How many"), dispatch_action=True,
                               element=_select("count_pick", [(c, c) for c in _COUNTS], count)),
                    InputBlock(block_id="duration", label=tr.gettext("Duration (e.g. 6h, 90m, 2h30m)"),
                               element=PlainTextInputElement(action_id="duration_text", initial_value=duration)),
                    InputBlock(block_id="project", label=tr.gettext("Project"), optional=True,
                               element=PlainTextInputElement(action_id="project_text",
                                                             initial_value=project or None)),
                    SectionBlock(block_id="quote", text=quote_text or tr.gettext("Pick a GPU to see prices."))])


def on_modal(ctx: BotContext, cmd: grammar.OpenBookModal, command: dict, client) -> None:
    """`/gpu book` alone: open the booking modal."""
    open_book_modal(ctx, client, command["trigger_id"], command["user_id"])


def open_book_modal(ctx: BotContext, client, trigger_id: str, user: str) -> None:
    """Open the modal for a slash command at once (in the language known without asking Slack: the trigger
    lives 3 s), then fill in the quote of its first choice in the reader's language."""
    quick = ctx.tr_for(user, ask_slack=False)
    opened = client.views_open(trigger_id=trigger_id, view=book_modal(quote_text=looking_up_text(quick), tr=quick))
    view = opened["view"]
    tr = ctx.tr_for(user)
    first = book_modal(quote_text=_quote_text(ctx, "a100", 1, tr), tr=tr)
    _update(ctx, client, view["id"], view.get("hash"), first, None)


def looking_up_text(tr: Translator = ENGLISH) -> str:
    """The quote line while the clouds are asked."""
    return tr.gettext("Looking up prices…")


RETRIES = 3  # views.update attempts after hash conflicts, each with the hash of the app's latest update


def _update(ctx: BotContext, client, view_id: str, view_hash: str | None, view: View,
            choice: tuple[str, ...] | None) -> None:
    """views.update with the quote for `choice` (None: the opening one) while it is still what the modal holds;
    after a hash_conflict, again with the hash of the app's latest update; nothing once the modal is closed."""
    with ctx.modals.sending(view_id):
        for _attempt in range(RETRIES + 1):
            if not ctx.modals.is_latest(view_id, choice):
                log.info("modal %s changed while its quote was computed; the newer choice's quote follows", view_id)
                return
            try:
                done = client.views_update(view_id=view_id, hash=view_hash, view=view)
            except SlackApiError as exc:
                error = exc.response.get("error")
                if error == "not_found":
                    log.info("modal %s was closed while its quote was computed", view_id)
                    return
                if error != "hash_conflict":
                    raise
                fresh = ctx.modals.hash_of(view_id)
                if fresh is None or fresh == view_hash:  # updated by another process: nothing newer known here
                    log.info("modal %s was updated elsewhere while its quote was computed", view_id)
                    return
                view_hash = fresh
                continue
            ctx.modals.updated(view_id, (done.get("view") or {}).get("hash"))
            return
    log.warning("modal %s: quote dropped after %d hash conflicts", view_id, RETRIES)


def _quote_text(ctx: BotContext, gpu: str, count: int, tr: Translator) -> str:
    result = quote(ctx.engine, OfferRequest(gpu, count), timedelta(hours=1))
    best = result.best
    if best is None:
        return tr.gettext("No provider offers {gpus}.").format(gpus=gpu_name(gpu, count))
    values = {"gpus": gpu_name(gpu, count), "price": money_for(tr, best.price_per_gpu_hour, ctx.engine.currency),
              "provider": best.offer.provider}
    if best.offer.available and best.offer.queued:
        return tr.gettext("{gpus}: {price}/GPU-h on {provider} (busy now; it would wait in {provider}'s own queue)"
                          ).format(**values)
    if best.offer.available:
        return tr.gettext("{gpus}: {price}/GPU-h on {provider} (available now)").format(**values)
    return tr.gettext("{gpus}: {price}/GPU-h on {provider} (none free now; it would queue)").format(**values)


def _values(view: dict) -> dict[str, str]:
    state = view["state"]["values"]
    pick = lambda block, action: (state.get(block, {}).get(action) or {})  # noqa: E731
    return {"gpu": (pick("gpu", "gpu_pick").get("selected_option") or {}).get("value", "a100"),
            "count": (pick("count", "count_pick").get("selected_option") or {}).get("value", "1"),
            "duration": pick("duration", "duration_text").get("value") or "4h",
            "project": pick("project", "project_text").get("value") or ""}


def _refresh_quote(ctx: BotContext, body: dict, client) -> None:
    values = _values(body["view"])
    if not values["count"].isdigit() or len(values["count"]) > 3:  # not one of the modal's own options
        return
    tr = ctx.tr_for(body["user"]["id"])
    text = _quote_text(ctx, values["gpu"], int(values["count"]), tr)
    _update(ctx, client, body["view"]["id"], body["view"].get("hash"),
            book_modal(values["gpu"], values["count"], values["duration"], values["project"], text, tr),
            _choice(values))


def _choice(values: dict[str, str]) -> tuple[str, ...]:
    """What a quote depends on: the GPU and the count picked."""
    return values["gpu"], values["count"]


def register(app: App, ctx: BotContext) -> None:
    """Attach the modal's live-quote actions and its submission."""

    @app.action("gpu_pick")
    @app.action("count_pick")
    def on_pick(ack, body, client) -> None:
        ack()
        if not body.get("view"):  # a pick outside the modal: nothing to refresh
            return
        ctx.modals.picked(body["view"]["id"], _choice(_values(body["view"])))
        ctx.later(lambda: _refresh_quote(ctx, body, client))

    @app.view(CALLBACK)
    def on_submit(ack, body, client) -> None:
        values = _values(body["view"])
        tr = ctx.tr_for(body["user"]["id"])
        # Each field is typed: one value, never re-read as command text (a project `p --provider sim` sets no
        # option); only the GPU, count and length go through the grammar, and the project is set as it is.
        problems = _field_problems(values, tr)
        if problems:
            ack(response_action="errors", errors=problems)
            return
        text = f"book {values['gpu']}x{values['count']} {values['duration'].strip()}"
        try:
            parsed = grammar.parse(text, now=ctx.engine.now(), limits=ctx.limits())
        except UserError as exc:
            ack(response_action="errors", errors={"duration": user_error_text(exc, tr)[:150]})
            return
        if values["project"].strip():
            parsed = dataclasses.replace(parsed, project=values["project"].strip())
        ack()
        user = body["user"]["id"]
        command = {"user_id": user, "channel_id": user, "trigger_id": body.get("trigger_id") or body["view"]["id"]}
        ctx.later(lambda: _book_from_modal(ctx, parsed, command, client))


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}")
_DURATION = re.compile(r"[0-9A-Za-z.:\u4e00-\u9fff]{1,20}")  # one length as typed: 4h, 1d12h, 90m, 半小时


def _field_problems(values: dict[str, str], tr: Translator) -> dict[str, str]:
    """The modal's fields that do not hold one value of their kind, with what to enter instead."""
    problems = {}
    if not _WORD.fullmatch(values["gpu"]) or not values["count"].isdigit() or len(values["count"]) > 3:
        problems["gpu"] = tr.gettext("Pick a GPU and a count from the lists.")
    if not _DURATION.fullmatch(values["duration"].strip()):
        problems["duration"] = tr.gettext("Enter one length, such as 4h, 90m or 1d.")
    if values["project"].strip() and not _WORD.fullmatch(values["project"].strip()):
        problems["project"] = tr.gettext("A project is one word of letters, digits and . _ - : / (at most 64).")
    return problems


def _book_from_modal(ctx: BotContext, parsed, command: dict, client) -> None:
    try:
        on_book(ctx, parsed, command, client)
    except UserError as exc:
        client.chat_postMessage(channel=command["user_id"], text=user_error_text(exc, ctx.tr_for(command["user_id"])))
