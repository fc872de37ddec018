"""What on-call hears: a provider fault triggered or resolved, per reader."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from gpubot.domain.notices.base import Audience, Notice, NoticeAction

__all__ = ["ProviderAlert"]


@dataclass(frozen=True)
class ProviderAlert(Notice):
    """On-call hears of a fault (`kind`, e.g. provider_quota), triggered or resolved, under the alert's key;
    `alert_id` is the ledger's alert (a key raised again after a resolve is a new one), `replace` the booking
    that a Replace button would replace (an overheat), `owner` whose booking it is about. `target` is the one
    chat reader (the alerts channel or an on-call person) of this copy: each reader is owed its own, so each is
    delivered and retried alone; the pager's copy has none."""

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

    @property
    def actions(self) -> tuple[NoticeAction, ...]:  # type: ignore[override]
        """Replace, on a trigger about a booking that can be replaced."""
        return (NoticeAction.REPLACE,) if self.replace is not None and not self.resolve else ()

    @property
    def key(self) -> str:
        return f"alert:{self.alert_key}:{self.alert_id}:{'resolve' if self.resolve else 'trigger'}{self._to()}"

    @property
    def follows(self) -> tuple[str, ...]:
        """A resolve never reaches a reader before its trigger to that reader (or before the one trigger for all
        readers that was owed before each reader had its own row)."""
        if not self.resolve:
            return ()
        return tuple(dict.fromkeys((self.trigger_key, replace(self, target="").trigger_key)))

    @property
    def trigger_key(self) -> str:
        """The key of the trigger this notice (a resolve) follows, on the same reader."""
        return f"alert:{self.alert_key}:{self.alert_id}:trigger{self._to()}"

    def _to(self) -> str:
        return f":{self.target}" if self.target else ""
