"""Slack's authorisation of the bot (`auth.test`), done by gpubot rather than lazily inside Bolt: Bolt acks a
command and then, when its lazy `auth.test` fails (a Slack 500 at a cold start, a revoked or rotated token),
drops it with one log line. Here a command (or a button click: gpubot/slack_waiting.py) waits for Slack with
backoff while it stays in the inbox, its sender is told through `response_url` (which needs no token) that gpubot
is waiting for Slack and, if that lasts or the token was revoked, that it failed; a revoked token turns `/readyz`
not ready with the reason and sets `gpubot_slack_auth_ok` to 0, which an alert rule watches
(deploy/prometheus/alerts.yml)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from slack_bolt import App
from slack_bolt.middleware.authorization.single_team_authorization import SingleTeamAuthorization
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.webhook import WebhookClient

from gpubot.bot.i18n import N_, Translator
from gpubot.scheduling.metrics import SLACK_AUTH_OK

__all__ = ["REVOKED_ERRORS", "SlackAuth", "answer_waiting"]

log = logging.getLogger(__name__)

# auth.test errors that no retry cures: the token is wrong, revoked, expired or its workspace gone.
REVOKED_ERRORS = frozenset({"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive",
                            "team_access_not_granted", "no_permission", "ekm_access_denied"})
WAITS = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 30.0, 30.0)  # about two minutes in all before a command is given up
RECHECK_EVERY = 60.0  # how often /readyz asks Slack again once authorised (a token revoked later is seen)


class SlackAuth:
    """The bot's authorisation, once established handed to Bolt's single-team middleware (which then never asks
    again); `revoked` holds Slack's error while the token is refused for good."""

    def __init__(self, app: App, *, waits: Sequence[float] = WAITS, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app, self.waits, self.sleep, self.clock = app, tuple(waits), sleep, clock
        self.revoked: str | None = None
        self._checked_at: float | None = None
        self._lock = threading.Lock()
        self._looking: threading.Thread | None = None
        SLACK_AUTH_OK.set(1)  # until Slack refuses the token

    def _middleware(self) -> SingleTeamAuthorization | None:
        return next((m for m in self.app._middleware_list if isinstance(m, SingleTeamAuthorization)), None)

    def authorised(self) -> bool:
        """Whether Bolt holds an authorisation (no need to ask Slack before dispatching)."""
        middleware = self._middleware()
        return middleware is None or bool(middleware.auth_test_result)

    def check(self) -> str | None:
        """Ask Slack (`auth.test`) now; None when it authorised the bot, else why not (`revoked: <error>` for a
        token refused for good, `unavailable: <why>` for anything a later try may cure)."""
        with self._lock:
            self._checked_at = self.clock()
            try:
                result = self.app.client.auth_test()
            except SlackApiError as exc:
                error = str(exc.response.get("error", "") if exc.response is not None else "") or "error"
                if error in REVOKED_ERRORS:
                    if self.revoked != error:
                        log.error("Slack refuses the bot token (%s): no command can be answered until "
                                  "SLACK_BOT_TOKEN is replaced", error)
                    self.revoked = error
                    SLACK_AUTH_OK.set(0)
                    return f"revoked: {error}"
                status = getattr(exc.response, "status_code", "?")
                return f"unavailable: HTTP {status} {error}"
            except (SlackClientError, OSError) as exc:
                return f"unavailable: {type(exc).__name__}"
            middleware = self._middleware()
            if middleware is not None:
                middleware.auth_test_result = result
            if self.revoked:
                log.info("Slack accepts the bot token again")
            self.revoked = None
            SLACK_AUTH_OK.set(1)
            return None

    def wait(self, waiting: Callable[[], None]) -> str | None:
        """Until Slack authorises the bot, with backoff: None once it did, else why it gave up (a revoked token
        at once, anything else after `waits`). `waiting` is called once, before the first wait."""
        if self.authorised():
            return None
        problem = self.check()
        for pause in self.waits:
            if problem is None or problem.startswith("revoked"):
                return problem
            if pause == self.waits[0]:
                log.warning("Slack did not authorise the bot (%s): the command waits for it", problem)
                waiting()
            self.sleep(pause)
            problem = self.check()
        return problem

    def check_within(self, seconds: float) -> bool:
        """Ask Slack in the background (unless a look is in flight) and wait at most `seconds` for the answer;
        whether the bot is authorised then (a look still going on later authorises it when Slack answers)."""
        if not self._lock.locked():
            self._looking = threading.Thread(target=self._check_quietly, name="gpubot-slack-auth", daemon=True)
            self._looking.start()
        if self._looking is not None:
            self._looking.join(seconds)
        return self.authorised()

    def problem(self) -> str | None:
        """For /readyz, at once: the revoked token's error as last seen. Slack is asked again in the background at
        most every RECHECK_EVERY seconds (a token revoked after start is seen; a probe never waits for Slack)."""
        due = self._checked_at is None or self.clock() - self._checked_at >= RECHECK_EVERY
        if due and not self._lock.locked():
            self._checked_at = self.clock()
            self._looking = threading.Thread(target=self._check_quietly, name="gpubot-slack-auth", daemon=True)
            self._looking.start()
        return f"Slack refuses the bot token ({self.revoked})" if self.revoked else None

    def settle(self, timeout: float) -> None:
        """Wait at most `timeout` seconds for a background look at the token still in flight (a clean stop)."""
        if self._looking is not None:
            self._looking.join(timeout)

    def _check_quietly(self) -> None:
        try:
            self.check()
        except Exception:  # a background look must never take the process down
            log.exception("checking the bot token with Slack failed")


WAITING = N_("⏳ Slack is not letting gpubot act right now, so `{command}` is waiting; it will run as soon as Slack "
             "is back (gpubot keeps trying for about {minutes} minutes).")
GAVE_UP = N_("⚠️ Slack did not let gpubot act for about {minutes} minutes, so `{command}` was not run. Please send "
             "it again later.")
REVOKED = N_("⚠️ Slack refuses gpubot's bot token, so `{command}` was not run. An admin must give gpubot a valid "
             "SLACK_BOT_TOKEN; then send it again.")


def answer_waiting(auth: SlackAuth, response_url: str | None, command: str, tr: Translator) -> bool:
    """Wait for Slack's authorisation for one command, telling its sender through `response_url` (no token
    needed) that it waits and, when it gives up, why; True when the command may run now."""
    minutes = max(1, round(sum(auth.waits) / 60))

    def say(text: str) -> None:
        if not response_url:
            return
        try:
            WebhookClient(response_url, timeout=10).send(text=text.format(command=command, minutes=minutes),
                                                         response_type="ephemeral", replace_original=False)
        except Exception as exc:  # the sender's reply is a courtesy: the inbox still marks the command
            log.warning("could not tell the sender through response_url: %s", type(exc).__name__)

    problem = auth.wait(lambda: say(tr.gettext(WAITING)))
    if problem is None:
        return True
    say(tr.gettext(REVOKED if problem.startswith("revoked") else GAVE_UP))
    log.warning("gave up a command waiting for Slack's authorisation: %s", problem)
    return False
