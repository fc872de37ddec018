"""What every listener shares: the engine, the Slack client, and small per-request helpers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo

from gpubot.bot.i18n import LanguageBook, Translator, language_of, translator_for
from gpubot.bot.modal_state import ModalStates
from gpubot.bot.tickets import TicketedExecutor
from gpubot.domain import grammar
from gpubot.scheduling.engine import Engine
from slack_sdk import WebClient

__all__ = ["BotContext"]

log = logging.getLogger(__name__)

FAILURE_TEXT = ("⚠️ Something went wrong on our side. `/gpu status` shows where your bookings stand; "
                "tell an admin if it keeps happening.")
PROFILE_TTL = 3600.0  # seconds a person's Slack time zone and language are trusted before users.info is asked again
PROFILE_RETRY = 300.0  # seconds before users.info is asked again after it failed (the team's defaults meanwhile)


@dataclass
class BotContext:
    """Shared by the listeners of one Bolt app."""

    engine: Engine
    client: WebClient  # asks Slack who people are (users.info: time zone, locale)
    languages: LanguageBook
    command: str = "/gpu"
    ack_observer: object | None = None
    workers: TicketedExecutor = field(default_factory=lambda: TicketedExecutor(16, "gpubot-work"))
    _profiles: dict[str, tuple[float, dict]] = field(default_factory=dict)  # user → (good until, users.info user)
    modals: ModalStates = field(default_factory=ModalStates)  # open booking modals: latest pick, latest hash

    def later(self, work: Callable[[], object], respond: Callable | None = None) -> None:
        """Run slow work after the ack on the bot's own workers, so Bolt's threads stay free to ack."""
        def run() -> None:
            try:
                work()
            except Exception:
                log.exception("work after ack failed")
                if respond:
                    respond(text=FAILURE_TEXT, response_type="ephemeral", replace_original=False)
        self.workers.submit(run)

    def limits(self) -> grammar.Limits:
        """Grammar limits from the team policy."""
        policy = self.engine.policy
        return grammar.Limits(max_gpus=policy.booking.max_gpus_per_user, max_duration=policy.booking.max_duration,
                              default_duration=policy.booking.default_duration,
                              providers=tuple(policy.providers), night_start=policy.booking.night_start,
                              night_end=policy.booking.night_end, team_tz=self.engine.team_tz)

    def user_tz(self, client, user: str, text: str) -> tzinfo:
        """The zone the grammar reads `text`'s times in: the user's (see `zone`) when the text has a time in it
        (`--at`, a watch's `--until`), else the team's."""
        if not any(option in text for option in ("--at", "--until", "—at", "—until")) and "at" not in text.split():
            return self.engine.team_tz
        return self.zone(user, client=client)

    def zone(self, user: str, ask_slack: bool = True, client=None) -> tzinfo:
        """The time zone `user` reads times in: their Slack `tz` (users.info, cached PROFILE_TTL, the same
        profile their Slack locale comes from), else the team's. Without `ask_slack`, only a cached profile."""
        if not user:
            return self.engine.team_tz or UTC
        profile = self._profile(client or self.client, user) if ask_slack else self._cached_profile(user)
        name = profile.get("tz")
        try:
            return ZoneInfo(name) if name else (self.engine.team_tz or UTC)
        except (ValueError, KeyError):
            return self.engine.team_tz or UTC

    def language(self, user: str, ask_slack: bool = True) -> tuple[str, str]:
        """The language `user` reads (`en` or `zh`) and why: `chosen` (`/gpu lang`), `slack` (their Slack
        locale) or `team` (team.language). Without `ask_slack`, only a Slack locale already cached counts."""
        chosen = self.languages.chosen(user)
        if chosen:
            return chosen, "chosen"
        profile = self._profile(self.client, user) if ask_slack else self._cached_profile(user)
        slack = language_of(profile.get("locale"))
        if slack:
            return slack, "slack"
        return self.engine.policy.team.language, "team"

    def tr_for(self, user: str, ask_slack: bool = True) -> Translator:
        """The translator for what `user` reads (see `language`), in their time zone (see `zone`)."""
        return translator_for(self.language(user, ask_slack)[0], self.zone(user, ask_slack))

    def reads(self, user: str) -> Translator:
        """What `user` reads in; for "" (a channel, on-call) the team's language and time zone: the notifier's
        reader (so a notice delivered later by the outbox is rendered in its reader's language and zone)."""
        return self.tr_for(user) if user else translator_for(self.engine.policy.team.language,
                                                             self.engine.team_tz or UTC)

    def _cached_profile(self, user: str) -> dict:
        cached = self._profiles.get(user)
        return cached[1] if cached and time.monotonic() < cached[0] else {}

    def _profile(self, client, user: str) -> dict:
        """users.info's user (with its locale), cached PROFILE_TTL; when Slack does not answer, an empty profile
        (the team's time zone and language) for PROFILE_RETRY."""
        now = time.monotonic()
        if user in self._profiles and now < self._profiles[user][0]:
            return self._profiles[user][1]
        try:
            profile, ttl = client.users_info(user=user, include_locale=True)["user"] or {}, PROFILE_TTL
        except Exception as exc:
            log.info("users.info for %s failed (%s); using the team's time zone and language", user,
                     type(exc).__name__)
            profile, ttl = {}, PROFILE_RETRY
        self._profiles[user] = (now + ttl, profile)
        return profile

    def observe_ack(self, command: dict) -> None:
        """Hook for the ack-latency metric."""
        if callable(self.ack_observer):
            self.ack_observer(command)
