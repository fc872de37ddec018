"""A fake of PagerDuty's Events API v2 (POST /v2/enqueue), recording the events it accepted.

As documented (spec providers.md §10 and PagerDuty's Events API v2 reference): 202 `{"status": "success",
"message": "Event processed", "dedup_key": …}` for an accepted event; 400 `{"status": "invalid event", "message":
"Event object is invalid", "errors": […]}` for one it will never take — an unknown routing key, an action other than
trigger/acknowledge/resolve, a missing dedup key on a resolve, a trigger without payload summary, source and a
severity of critical/error/warning/info, a summary over 1024 or a dedup key over 255 characters. 429 and 5xx come
from injected faults (`inject("ratelimit")`, `inject("status", status=503)`), as the real service sends them when
it throttles or fails.
"""

from __future__ import annotations

from tests.fakes.server import FakeVendor, Request

__all__ = ["FakePagerDuty"]

SEVERITIES = ("critical", "error", "warning", "info")


class FakePagerDuty(FakeVendor):
    """Accepts valid events for its routing key; 400 with the reasons otherwise."""

    def __init__(self, routing_key: str = "R0UTINGKEY0123456789012345678901") -> None:
        super().__init__()
        self.routing_key = routing_key
        self.events: list[dict] = []
        self.route("POST", "/v2/enqueue", self._enqueue)

    def _enqueue(self, request: Request) -> tuple:
        try:
            event = request.json() or {}
        except ValueError:
            return _invalid("body is not JSON")
        problems = self._problems(event) if isinstance(event, dict) else ["event must be an object"]
        if problems:
            return _invalid(*problems)
        with self.lock:
            self.events.append(event)
        return 202, {"status": "success", "message": "Event processed", "dedup_key": event["dedup_key"]}

    def _problems(self, event: dict) -> list[str]:
        problems = [] if event.get("routing_key") == self.routing_key else ["'routing_key' is invalid"]
        if event.get("event_action") not in ("trigger", "acknowledge", "resolve"):
            problems.append("'event_action' must be one of trigger, acknowledge, resolve")
        if not event.get("dedup_key") or len(str(event["dedup_key"])) > 255:
            problems.append("'dedup_key' is missing or longer than 255 characters")
        if event.get("event_action") == "trigger":
            problems += _payload_problems(event.get("payload") or {})
        return problems

    @property
    def url(self) -> str:  # type: ignore[override]
        """The Events API URL."""
        return super().url + "/v2/enqueue"


def _payload_problems(payload: dict) -> list[str]:
    problems = [f"'payload.{key}' is missing" for key in ("summary", "source", "severity") if not payload.get(key)]
    if payload.get("severity") and payload["severity"] not in SEVERITIES:
        problems.append("'payload.severity' must be one of critical, error, warning, info")
    if len(str(payload.get("summary", ""))) > 1024:
        problems.append("'payload.summary' is longer than 1024 characters")
    return problems


def _invalid(*errors: str) -> tuple[int, dict]:
    return 400, {"status": "invalid event", "message": "Event object is invalid", "errors": list(errors)}
