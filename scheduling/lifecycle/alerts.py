"""On-call alerts: recorded in the ledger, paged once per dedup key, resolved once, redelivered on failure.

Two channels carry an alert, each with its own record on the alert row, so that a redelivery sends only what is
missing: the alerts channel and on-call DMs (the Notifier; `delivered`), and PagerDuty (the engine's Pager;
`paged`, `pager_error`, `pager_due_at`). A trigger or resolve PagerDuty did not take (429, 5xx, unreachable, after
the HTTP client's own retries) is sent again by the redelivery job with exponential backoff, for as long as it is
missing — a failed resolve too, or the incident would stay open for ever. A resolve is only sent for an incident
PagerDuty accepted; an alert resolved before its trigger got through needs nothing more there. A 400 from
PagerDuty is final (the event can never be taken): logged once, recorded in `pager_error`, never sent again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from gpubot.db import alerts as alert_repo
from gpubot.domain.notices import Notice
from gpubot.domain.ports import Action
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import ALERTS

__all__ = ["raise_alert", "redeliver", "resolve_alert"]

log = logging.getLogger(__name__)

MAX_DELIVERY_ATTEMPTS = 10  # Slack posts of one alert
PAGE_BACKOFF = timedelta(seconds=30)  # first wait before sending a failed PagerDuty event again; doubles each time
PAGE_BACKOFF_MAX = timedelta(minutes=15)


def raise_alert(engine: Engine, kind: str, key: str, summary: str, severity: str = "error",
                actions: list[Action] | None = None, notices: tuple[Notice, ...] = ()) -> bool:
    """Trigger an alert unless one is already open for `key`; True when this call paged.

    `actions` are its buttons; they are kept with the alert, so a redelivery carries them too. `notices` (the
    people concerned) are owed in the transaction that opens the alert: told once, and only when it opens."""
    with engine.db.session() as session:
        alert_id = alert_repo.open_alert(kind, key, summary, severity, engine.now(), session=session,
                                         actions=actions)
        if alert_id is not None:
            for notice in notices:
                tell(engine, notice, session=session)
    if alert_id is None:
        return False
    ALERTS.labels(kind).inc()
    _deliver(engine, alert_id, kind, key, summary, severity, resolve=False, actions=actions)
    _page(engine, alert_id, kind, key, summary, severity, "trigger", attempts=0)
    return True


def resolve_alert(engine: Engine, key: str, summary: str) -> bool:
    """Resolve the open alert for `key`; True when one was open."""
    with engine.db.session() as session:
        row = alert_repo.close_alert(key, engine.now(), session=session)
    if row is None:
        return False
    engine.notifier.alert(row.kind, key, summary, row.severity, resolve=True)
    if row.paged == "trigger":
        _page(engine, row.id, row.kind, key, summary, row.severity, "resolve", attempts=0)
    return True


def redeliver(engine: Engine) -> int:
    """Retry what did not get through: alerts-channel posts that failed, and PagerDuty events that are due again
    (each channel on its own: a PagerDuty redelivery never posts to Slack again). How many were retried."""
    with engine.db.session() as session:
        pending = alert_repo.undelivered(MAX_DELIVERY_ATTEMPTS, session=session)
        due = alert_repo.pages_due(engine.now(), session=session) if engine.pager else []
    for row in pending:
        _deliver(engine, row.id, row.kind, row.dedup_key, row.summary, row.severity, resolve=False,
                 actions=alert_repo.actions_of(row))
    for row in due:
        event = alert_repo.missing_page(row)
        if event:
            _page(engine, row.id, row.kind, row.dedup_key, row.summary, row.severity, event, row.pager_attempts)
        else:
            with engine.db.session() as session:
                alert_repo.settle_page(row.id, session=session)
    return len(pending) + len(due)


def _deliver(engine: Engine, alert_id: int, kind: str, key: str, summary: str, severity: str, resolve: bool,
             actions: list[Action] | None = None) -> None:
    extra = {"actions": actions} if actions else {}  # notifiers without buttons keep working
    try:
        delivered = bool(engine.notifier.alert(kind, key, summary, severity, resolve=resolve, **extra))
    except Exception:  # a Slack outage must never stop the bot
        log.exception("alert %s could not be delivered", key)
        delivered = False
    with engine.db.session() as session:
        alert_repo.mark_delivery(alert_id, delivered, session=session)


def _page(engine: Engine, alert_id: int, kind: str, key: str, summary: str, severity: str, event: str,
          attempts: int) -> None:
    """Send one event to PagerDuty (when configured) and record what became of it."""
    if engine.pager is None:
        return
    try:
        outcome = engine.pager.page(kind, key, summary, severity, resolve=event == "resolve")
    except Exception:  # a pager outage must never stop the bot
        log.exception("PagerDuty %s of %s failed", event, key)
        outcome = "failed"
    due = engine.now() + min(PAGE_BACKOFF * 2 ** attempts, PAGE_BACKOFF_MAX) if outcome == "failed" else None
    with engine.db.session() as session:
        alert_repo.mark_page(alert_id, event, outcome, due, session=session)

