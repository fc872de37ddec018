"""The Bolt app: one place that registers every listener group."""

from __future__ import annotations

import logging

from gpubot.bot.context import FAILURE_TEXT, BotContext
from gpubot.bot.listeners import actions, commands, home, modal, watches
from gpubot.bot.tickets import TicketedExecutor
from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

__all__ = ["build_app", "new_app", "outbox_client"]

log = logging.getLogger(__name__)


def new_app(token: str, api_url: str, signing_secret: str) -> App:
    """A Bolt app that owns the bot's one WebClient, on `api_url`, retrying connection errors and 429s (after
    Retry-After). Bolt builds the client from `token` itself: given a client too, it would warn that a token
    (from SLACK_BOT_TOKEN) goes unused."""
    # Listeners only ack and hand work to ctx.later, so this pool is for acks; Bolt's default is 5 threads.
    # gpubot/server.py verifies every signed body before Bolt sees it; Bolt checking again could refuse an acked
    # command whose five-minute timestamp window passed while it waited in the inbox for its listener.
    app = App(token=token, signing_secret=signing_secret, token_verification_enabled=False,
              request_verification_enabled=False,
              process_before_response=False, raise_error_for_unhandled_request=False,
              listener_executor=TicketedExecutor(32, "bolt-ack"))
    client = app.client
    client.base_url, client.timeout = api_url.rstrip("/") + "/", 15
    client.retry_handlers = [ConnectionErrorRetryHandler(max_retry_count=2),
                             RateLimitErrorRetryHandler(max_retry_count=3)]
    return app


def outbox_client(client: WebClient) -> WebClient:
    """A client like `client` for the outbox's deliveries: it never sleeps through a 429 (the outbox waits out
    Retry-After and meanwhile delivers other notices) and retries a dropped connection once."""
    sender = WebClient(token=client.token, base_url=client.base_url, timeout=10)
    sender.retry_handlers = [ConnectionErrorRetryHandler(max_retry_count=1)]
    return sender


def build_app(app: App, ctx: BotContext) -> App:
    """Register every listener group on `app`, sharing `ctx`, and the one error handler."""
    for group in (commands, actions, modal, home, watches):
        group.register(app, ctx)

    @app.error
    def on_error(error, body, logger) -> None:
        logger.exception("listener failed: %s", type(error).__name__)
        _tell_user(app.client, body)

    return app


def _tell_user(client, body: dict) -> None:
    urls = body.get("response_urls") or [{}]
    url = body.get("response_url") or urls[0].get("response_url")
    if not url:
        return
    try:
        WebhookClient(url).send(text=FAILURE_TEXT, response_type="ephemeral", replace_original=False)
    except Exception:
        log.warning("could not tell the user about the failure")
