"""Notices: every kind survives the outbox's JSON codec unchanged, and keys tell repeats from new notices."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.domain.notices import (
    NOTICE_TYPES,
    AlertRow,
    AttemptsRow,
    Audience,
    BookingProgress,
    BookingRow,
    CheckRow,
    CudaExclusion,
    ExpiryWarning,
    GroupRow,
    IdleKept,
    IdleReminder,
    IdleSnoozed,
    NoticeAction,
    ProgressStep,
    ProviderAlert,
    QuoteBudgetRow,
    ShapeChoice,
    StepKind,
    WasteRow,
    from_record,
    to_record,
)

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
SAMPLE = {str: "x<@U1>`", int: 7, float: 81.5, bool: True, Decimal: Decimal("12.345678"), datetime: T0,
          timedelta: timedelta(hours=1, seconds=3)}


ROWS = {row.__name__: row for row in (AlertRow, AttemptsRow, BookingRow, CheckRow, GroupRow, WasteRow, CudaExclusion,
                                      QuoteBudgetRow, ShapeChoice)}


def _value(kind: str):
    if kind.startswith("tuple[tuple["):  # rows of plain values (`tuple[tuple[str, str], ...]`): one row
        inner = kind.removeprefix("tuple[tuple[").split("]")[0]
        return (tuple(_value(part.strip()) for part in inner.split(",")),)
    if kind.startswith("tuple["):  # a tuple of one value of its item type
        return (_value(kind.removeprefix("tuple[").split(",")[0]),)
    return SAMPLE[{t.__name__: t for t in SAMPLE}[kind.split(" |")[0]]]


def _steps() -> tuple[ProgressStep, ...]:
    """One step of every kind, every field set to a non-default value of its type."""
    values = {f.name: _value(f.type) for f in fields(ProgressStep) if f.name != "kind"}
    return tuple(ProgressStep(kind, **values) for kind in StepKind)


def _sample(cls):
    """A notice of `cls` with every field set to a non-default value of its type (rows: each of their fields)."""
    values = {}
    for f in fields(cls):
        kind = f.type.split(" |")[0]
        item = kind.removeprefix("tuple[").split(",")[0]
        if item == "ProgressStep":
            values[f.name] = _steps()
        elif kind.startswith("tuple[tuple[str, Decimal, Decimal]"):
            values[f.name] = (("team", Decimal("36.5"), Decimal(20)), ("user:U1", Decimal(12), Decimal(10)))
        elif kind.startswith("tuple[tuple"):
            values[f.name] = (("vision", "$1.00"), ("nlp", "$2.00"))
        elif item in ROWS:
            row = ROWS[item](*(_value(getattr(part, "__forward_arg__", part)) for part in
                               ROWS[item].__annotations__.values()))
            values[f.name] = (row, row)
        elif kind.startswith("tuple[str"):
            values[f.name] = ("a: no capacity", "b: launching…")
        elif kind.startswith("tuple"):
            values[f.name] = (_value(item), _value(item))
        else:
            values[f.name] = _value(kind)
    return cls(**values)


@pytest.mark.parametrize("cls", list(NOTICE_TYPES.values()), ids=list(NOTICE_TYPES))
def test_every_notice_comes_back_from_json_equal_to_itself(cls):
    notice = _sample(cls)
    record = json.loads(json.dumps(to_record(notice)))
    back = from_record(record)
    assert back == notice and type(back) is cls
    assert back.key == notice.key and back.key


def test_an_unknown_record_type_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown notice type 'Nope'"):
        from_record({"type": "Nope", "fields": {}})


def test_a_reminder_in_the_same_idle_stretch_after_a_grace_is_a_new_notice():
    first = IdleReminder(to="U1", booking_id=3, gpu="a100", count=4, idle_since=T0)
    again = IdleReminder(to="U1", booking_id=3, gpu="a100", count=4, idle_since=T0,
                         previous=T0 + timedelta(hours=1))
    assert first.key != again.key
    assert first.key == IdleReminder(to="U1", booking_id=3, gpu="a100", count=4, idle_since=T0,
                                     idle_for=timedelta(hours=9)).key


def test_expiry_warnings_differ_by_offset_and_by_end():
    warn = ExpiryWarning(to="U1", booking_id=3, gpu="a100", count=4, ends_at=T0, offset=timedelta(minutes=15))
    assert warn.key != ExpiryWarning(to="U1", booking_id=3, gpu="a100", count=4, ends_at=T0,
                                     offset=timedelta(minutes=60)).key
    assert warn.key != ExpiryWarning(to="U1", booking_id=3, gpu="a100", count=4, ends_at=T0 + timedelta(hours=1),
                                     offset=timedelta(minutes=15)).key
    assert warn.actions == (NoticeAction.EXTEND, NoticeAction.RELEASE)


def test_progress_lands_on_the_booking_message():
    assert BookingProgress(to="U1", booking_id=3, gpu="a100", count=4).audience is Audience.BOOKING_MESSAGE
    assert ExpiryWarning(to="U1", booking_id=3, gpu="a100", count=4).audience is Audience.PERSON


def test_each_on_call_reader_has_its_own_alert_key_and_its_resolve_follows_its_own_trigger():
    trigger = ProviderAlert(kind="provider_quota", alert_key="q", summary="s", alert_id=3)
    resolve = ProviderAlert(kind="provider_quota", alert_key="q", summary="s", alert_id=3, resolve=True)
    per_reader = {reader: (replace(trigger, target=reader), replace(resolve, target=reader))
                  for reader in ("CALERTS", "UON1", "UON2")}
    keys = {t.key for t, _r in per_reader.values()} | {r.key for _t, r in per_reader.values()}
    assert len(keys) == 6 and trigger.key not in keys  # the pager's copy (no reader) keeps its own key
    assert all(r.trigger_key == t.key for t, r in per_reader.values())
    assert resolve.trigger_key == trigger.key == "alert:q:3:trigger"


def test_keep_is_one_notice_per_idle_stretch_and_snooze_one_per_snooze():
    kept = IdleKept(to="U1", booking_id=3, gpu="a100", count=4, idle_since=T0)
    assert kept.key == replace(kept, to="UADMIN").key != replace(kept, idle_since=T0 + timedelta(hours=2)).key
    snoozed = IdleSnoozed(to="U1", booking_id=3, gpu="a100", count=4, until=T0)
    assert snoozed.key != replace(snoozed, until=T0 + timedelta(hours=1)).key and snoozed.key != kept.key


def test_an_alert_update_follows_its_trigger_and_the_update_before_and_its_resolve_follows_the_last_update():
    trigger = ProviderAlert(kind="overheat", alert_key="o", summary="s", alert_id=3, target="CALERTS", replace=7)
    first, second = replace(trigger, folded=1), replace(trigger, folded=2)
    assert first.is_update and not trigger.is_update and first.key == "alert:o:3:update:1:CALERTS" != second.key
    assert first.follows == (trigger.key, "alert:o:3:trigger") and second.follows[-1] == first.key
    assert first.actions == trigger.actions == (NoticeAction.REPLACE,)
    resolve = replace(second, resolve=True)
    assert not resolve.is_update and resolve.key == "alert:o:3:resolve:CALERTS" and resolve.follows[-1] == second.key
    late = replace(trigger, folded=3, closed=True, replace=None)  # folded into an alert already resolved
    assert late.follows[-2:] == (second.key, resolve.key) and late.actions == ()
    assert replace(trigger, resolve=True).follows == (trigger.key, "alert:o:3:trigger")
