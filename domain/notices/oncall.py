"""What on-call hears: a provider fault triggered or resolved, per reader."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import ClassVar

from gpubot.domain.notices.base import Audience, Notice, NoticeAction

__all__ = ["ProviderAlert"]


@dataclass(frozen=True)
class ProviderAlert(Notice):
    """On-call hears of a fault (`kind`, e.g. provider_quota), triggered or resolved, under the alert's key;
    `alert_id` is the ledger's alert (a key raised again after a resolve is a new one), `replace` the booking
    that a Replace button would replace (an overheat), `owner` whose booking it is about. `target` is the one
    chat reader (the alerts channel or an on-call person) of this copy: each reader is owed its own, so each is
    delivered and retried alone; the pager's copy has none.

    A notice with `folded` crossings and no `resolve` is an update: the hourly page cap folded another crossing
    into the alert (domain.alerting), so its message is rewritten with the count and the `latest_*` reading
    instead of anything new being posted or paged (`closed`: the alert had already resolved). A resolve carries
    the count folded so far, and follows the last update."""

    audience: ClassVar[Audience] = Audience.ONCALL
    kind: str
    alert_key: str
    summary: str
    severity: str = "error"
    resolve: bool = False
    alert_id: int = 0
    replace: int | None = None
    owner: str = ""  # the person the alert concerns (a Slack user id), named by the renderer
    target: str = ""
    folded: int = 0
    latest_gpu: int | None = None
    latest_value: float | None = None
    latest_at: datetime | None = None
    closed: bool = False

    @property
    def is_update(self) -> bool:
        """Whether this rewrites an alert's message with a folded crossing (nothing new to post or page)."""
        return self.folded > 0 and not self.resolve

    @property
    def actions(self) -> tuple[NoticeAction, ...]:  # type: ignore[override]
        """Replace, on a trigger about a booking that can be replaced."""
        return (NoticeAction.REPLACE,) if self.replace is not None and not (self.resolve or self.closed) else ()

    @property
    def key(self) -> str:
        event = "resolve" if self.resolve else f"update:{self.folded}" if self.folded else "trigger"
        return f"alert:{self.alert_key}:{self.alert_id}:{event}{self._to()}"

    @property
    def follows(self) -> tuple[str, ...]:
        """A resolve or an update never reaches a reader before its trigger to that reader (or before the one
        trigger for all readers that was owed before each reader had its own row), nor before the update that
        came before it (so the message never goes back to an older count); an update of a closed alert comes
        after its resolve."""
        if not (self.resolve or self.folded):
            return ()
        earlier = [self.trigger_key, replace(self, target="").trigger_key]
        if self.folded > (0 if self.resolve else 1):
            earlier.append(replace(self, resolve=False, folded=self.folded - (0 if self.resolve else 1)).key)
        if self.is_update and self.closed:
            earlier.append(replace(self, resolve=True).key)
        return tuple(dict.fromkeys(earlier))

    @property
    def trigger_key(self) -> str:
        """The key of the trigger this notice (a resolve) follows, on the same reader."""
        return f"alert:{self.alert_key}:{self.alert_id}:trigger{self._to()}"

    def _to(self) -> str:
        return f":{self.target}" if self.target else ""
