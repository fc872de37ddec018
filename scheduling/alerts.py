"""On-call alerts: recorded in the ledger, paged once per dedup key, resolved once, redelivered on failure."""

from __future__ import annotations

import logging

from db import alerts as alert_repo
from domain.ports import Action
from scheduling.engine import Engine
from scheduling.metrics import ALERTS

__all__ = ["raise_alert", "redeliver", "resolve_alert"]

log = logging.getLogger(__name__)

MAX_DELIVERY_ATTEMPTS = 10


def raise_alert(engine: Engine, kind: str, key: str, summary: str, severity: str = "error",
                actions: list[Action] | None = None) -> bool:
    """Trigger an alert unless one is already open for `key`; True when this call paged.

    `actions` are its buttons; they are kept with the alert, so a redelivery carries them too."""
    with engine.db.session() as session:
        alert_id = alert_repo.open_alert(kind, key, summary, severity, engine.now(), session=session,
                                         actions=actions)
    if alert_id is None:
        return False
    ALERTS.labels(kind).inc()
    _deliver(engine, alert_id, kind, key, summary, severity, resolve=False, actions=actions)
    return True


def resolve_alert(engine: Engine, key: str, summary: str) -> bool:
    """Resolve the open alert for `key`; True when one was open."""
    with engine.db.session() as session:
        row = alert_repo.close_alert(key, engine.now(), session=session)
    if row is None:
        return False
    engine.notifier.alert(row.kind, key, summary, row.severity, resolve=True)
    return True


def redeliver(engine: Engine) -> int:
    """Retry alerts whose delivery failed (PagerDuty or Slack down); returns how many were retried."""
    with engine.db.session() as session:
        pending = alert_repo.undelivered(MAX_DELIVERY_ATTEMPTS, session=session)
    for row in pending:
        _deliver(engine, row.id, row.kind, row.dedup_key, row.summary, row.severity, resolve=False,
                 actions=alert_repo.actions_of(row))
    return len(pending)


def _deliver(engine: Engine, alert_id: int, kind: str, key: str, summary: str, severity: str, resolve: bool,
             actions: list[Action] | None = None) -> None:
    extra = {"actions": actions} if actions else {}  # notifiers without buttons keep working
    try:
        delivered = bool(engine.notifier.alert(kind, key, summary, severity, resolve=resolve, **extra))
    except Exception:  # a pager outage must never stop the bot
        log.exception("alert %s could not be delivered", key)
        delivered = False
    with engine.db.session() as session:
        alert_repo.mark_delivery(alert_id, delivered, session=session)
