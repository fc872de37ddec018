"""The Bolt app: one place that registers every listener group."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

from bot.context import FAILURE_TEXT, BotContext
from bot.listeners import actions, commands, home, modal, watches

__all__ = ["build_app", "web_client"]

log = logging.getLogger(__name__)



def web_client(token: str, api_url: str) -> WebClient:
    """A WebClient on `api_url` that retries connection errors and 429s (after Retry-After)."""
    return WebClient(token=token, base_url=api_url.rstrip("/") + "/", timeout=15,
                     retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=2),
                                     RateLimitErrorRetryHandler(max_retry_count=3)])


def build_app(ctx: BotContext, client: WebClient, signing_secret: str) -> App:
    """A Bolt app whose listeners all share `ctx`; requests must be signed with `signing_secret`."""
    # Listeners only ack and hand work to ctx.later, so this pool is for acks; Bolt's default is 5 threads.
    app = App(client=client, signing_secret=signing_secret, token_verification_enabled=False,
              process_before_response=False, raise_error_for_unhandled_request=False,
              listener_executor=ThreadPoolExecutor(32, "bolt-ack"))
    for group in (commands, actions, modal, home, watches):
        group.register(app, ctx)

    @app.error
    def on_error(error, body, logger) -> None:
        logger.exception("listener failed: %s", type(error).__name__)
        _tell_user(client, body)

    return app


def _tell_user(client: WebClient, body: dict) -> None:
    urls = body.get("response_urls") or [{}]
    url = body.get("response_url") or urls[0].get("response_url")
    if not url:
        return
    try:
        WebhookClient(url).send(text=FAILURE_TEXT, response_type="ephemeral", replace_original=False)
    except Exception:
        log.warning("could not tell the user about the failure")
