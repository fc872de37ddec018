"""A fake of PagerDuty's Events API v2 (POST /v2/enqueue → 202), recording events."""

from __future__ import annotations

from tests.fakes.server import FakeVendor, Request


class FakePagerDuty(FakeVendor):
    """Accepts events with a routing key; 400 on a malformed event, like the real API."""

    def __init__(self, routing_key: str = "R0UTINGKEY0123456789012345678901") -> None:
        super().__init__()
        self.routing_key = routing_key
        self.events: list[dict] = []
        self.route("POST", "/v2/enqueue", self._enqueue)

    def _enqueue(self, request: Request) -> tuple:
        event = request.json() or {}
        if event.get("routing_key") != self.routing_key or event.get("event_action") not in (
                "trigger", "resolve", "acknowledge") or not event.get("dedup_key"):
            return 400, {"status": "invalid event", "message": "Event object is invalid", "errors": ["bad"]}
        if event["event_action"] == "trigger" and not (event.get("payload") or {}).get("summary"):
            return 400, {"status": "invalid event", "message": "Event object is invalid",
                         "errors": ["'payload.summary' is missing"]}
        self.events.append(event)
        return 202, {"status": "success", "message": "Event processed", "dedup_key": event["dedup_key"]}

    @property
    def url(self) -> str:  # type: ignore[override]
        """The Events API URL."""
        return super().url + "/v2/enqueue"
