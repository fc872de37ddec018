"""On-call alerts: one open alert per dedup key in the ledger, told as ProviderAlert notices through the outbox.

Raising an alert opens its row and owes its trigger in one transaction; resolving closes the row and owes the
resolve. The outbox delivers each to the alerts channel and on-call DMs (Slack) and to PagerDuty when one is
configured, each channel on its own with its own retries (scheduling.delivery): a PagerDuty retry never posts
to Slack again, a resolve waits for its trigger on every channel, and a 400 from PagerDuty is final. A resolve
is paged only for an incident PagerDuty has or may still get: an alert resolved before its trigger left for
PagerDuty withdraws the trigger, and pages nothing. A crossing folded into an alert (the hourly page cap spent)
rewrites the alert's messages in Slack with the count and the latest reading (`fold_alert_in`): one post per
alert, then updates, and nothing more paged.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

from gpubot.db import alerts as alert_repo
from gpubot.db import outbox
from gpubot.db.tables.operations import AlertRow
from gpubot.domain.notices import Notice, ProviderAlert
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import ALERTS

__all__ = ["fold_alert_in", "raise_alert", "raise_alert_in", "resolve_alert"]


def raise_alert(engine: Engine, kind: str, key: str, summary: str, severity: str = "error",
                replace: int | None = None, notices: tuple[Notice, ...] = ()) -> bool:
    """Trigger an alert unless one is already open for `key`; True when this call raised it.

    `replace` is the booking a Replace button offers to replace (an overheat). `notices` (the people concerned)
    are owed in the same transaction: told once, and only when the alert opens."""
    with engine.db.session() as session:
        return raise_alert_in(engine, ProviderAlert(kind=kind, alert_key=key, summary=summary, severity=severity,
                                                    replace=replace), session=session, notices=notices)


def raise_alert_in(engine: Engine, alert: ProviderAlert, *, session, notices: tuple[Notice, ...] = ()) -> bool:
    """Open `alert` and owe its trigger (and `notices`) in `session`'s transaction, the one of the state change
    that causes it; False (nothing owed) when an alert is already open for its key."""
    alert_id = alert_repo.open_alert(alert.kind, alert.alert_key, alert.summary, alert.severity, engine.now(),
                                     session=session)
    if alert_id is None:
        return False
    tell(engine, dataclasses.replace(alert, alert_id=alert_id), session=session)
    for notice in notices:
        tell(engine, notice, session=session)
    ALERTS.labels(alert.kind).inc()
    return True


def resolve_alert(engine: Engine, key: str, summary: str) -> bool:
    """Resolve the open alert for `key`; True when one was open."""
    with engine.db.session() as session:
        row = alert_repo.close_alert(key, engine.now(), session=session)
        if row is None:
            return False
        resolved = ProviderAlert(kind=row.kind, alert_key=key, summary=summary, severity=row.severity, resolve=True,
                                 alert_id=row.id or 0, **_folded(row))
        # row.paged: raised before alerts went through the outbox, and paged then
        tell(engine, resolved, session=session, page=row.paged == "trigger" or _paged(engine, resolved, session))
    return True


def fold_alert_in(engine: Engine, row: AlertRow, *, replace: int | None = None, session) -> bool:
    """Owe the update of `row`'s messages now that another crossing was folded into it (`row.folded` is the new
    count, its details the latest reading), in `session`'s transaction; Slack only, never paged. `replace`: the
    booking its Replace button offers, kept while the alert is open."""
    closed = row.open_key is None
    update = ProviderAlert(kind=row.kind, alert_key=row.dedup_key, summary=row.summary, severity=row.severity,
                           alert_id=row.id or 0, replace=None if closed else replace, closed=closed, **_folded(row))
    return tell(engine, update, session=session, page=False)


def _folded(row: AlertRow) -> dict:
    """The count of crossings folded into `row` and its latest reading, as a ProviderAlert's fields."""
    if not row.folded:
        return {}
    latest = (json.loads(row.details) if row.details else [{}])[-1]
    seen = latest.get("seen")
    return {"folded": row.folded, "latest_gpu": latest.get("gpu"), "latest_value": latest.get("value"),
            "latest_at": datetime.fromisoformat(seen) if seen else None}


def _paged(engine: Engine, resolved: ProviderAlert, session) -> bool:
    """Whether PagerDuty has, or may still get, the trigger that `resolved` closes; a trigger that has not left
    yet is withdrawn instead (nothing to page, nothing to resolve)."""
    if engine.pager is None:
        return False
    trigger = resolved.trigger_key
    if outbox.was_delivered("pagerduty", trigger, session=session):
        return True
    if outbox.withdraw("pagerduty", trigger, engine.now(), "resolved before it was paged", session=session):
        return False
    return outbox.is_pending("pagerduty", trigger, session=session)  # in a worker's hands right now
