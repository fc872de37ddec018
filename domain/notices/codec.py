"""The outbox's codec: a notice as a JSON-able record and back, old rows' shapes included."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.domain.notices import booking, booking_progress, money, oncall, running, watches
from gpubot.domain.notices.base import Notice
from gpubot.domain.notices.booking import BookingGaveUp
from gpubot.domain.notices.booking_progress import BookingProgress, ProgressStep, StepKind

__all__ = ["NOTICE_TYPES", "from_record", "to_record"]


_MODULES = (booking, booking_progress, running, money, watches, oncall)  # every notice's home, so each is defined here


def _concrete(cls: type[Notice]) -> list[type[Notice]]:
    """Every notice class below `cls` (those named with a leading underscore are only shared shapes)."""
    below = [c for sub in cls.__subclasses__() for c in (sub, *_concrete(sub))]
    return [c for c in below if not c.__name__.startswith("_")]


NOTICE_TYPES: dict[str, type[Notice]] = {cls.__name__: cls for cls in _concrete(Notice)}


def to_record(notice: Notice) -> dict:
    """A JSON-able dict of the notice: its type and its fields, each value tagged where JSON has no type for it."""
    return {"type": type(notice).__name__, "fields": {f.name: _encode(getattr(notice, f.name))
                                                      for f in fields(notice)}}


def from_record(record: dict) -> Notice:
    """The notice `to_record` made; ValueError for an unknown type."""
    cls = NOTICE_TYPES.get(record.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown notice type {record.get('type')!r}")
    values = {name: _decode(value) for name, value in record["fields"].items()}
    if cls in (BookingProgress, BookingGaveUp):  # a row owed before progress was data holds English text
        values["trail"] = tuple(ProgressStep(StepKind.TEXT, text=step) if isinstance(step, str) else step
                                for step in values.get("trail", ()))
    return cls(**values)


def _encode_step(step: ProgressStep) -> dict:
    """The step's fields that differ from their defaults (a trail is owed often; its rows stay small)."""
    return {"$step": {f.name: _encode(getattr(step, f.name)) for f in fields(step)
                      if getattr(step, f.name) != f.default}}


def _decode_step(values: dict) -> ProgressStep:
    decoded = {name: _decode(value) for name, value in values.items()}
    return ProgressStep(**(decoded | {"kind": StepKind(decoded["kind"])}))


def _encode(value: object) -> object:
    if isinstance(value, ProgressStep):
        return _encode_step(value)
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$td": value.total_seconds()}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    return value


def _decode(value: object) -> object:
    if not isinstance(value, dict):
        return value
    (tag, inner), = value.items()
    decoders = {"$dec": Decimal, "$dt": datetime.fromisoformat, "$td": lambda s: timedelta(seconds=s),
                "$tuple": lambda items: tuple(_decode(v) for v in items), "$step": _decode_step}
    return decoders[tag](inner)
