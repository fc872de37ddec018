"""PagerDuty Events API v2: trigger and resolve on-call incidents with a stable dedup key (spec providers.md §10).

PagerDuty answers 202 when it accepted an event, 400 when the event is invalid and will never be accepted, 429
when it is rate limited and 5xx when it failed. 429 and 5xx are retried with backoff by the shared HTTP client
(VendorHttp, tenacity: one call) and, when that is not enough, by the outbox (scheduling.delivery: later
calls, through gpubot.wiring.PagerChannel). A 400 is final: it is logged once, with PagerDuty's reasons, and
the event is not sent again.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from gpubot.domain.errors import ProviderError
from gpubot.domain.ports import PageOutcome
from gpubot.providers.http import VendorHttp

__all__ = ["PagerDuty"]

log = logging.getLogger(__name__)

_SEVERITY = {"error": "error", "warning": "warning", "critical": "critical", "info": "info"}


class PagerDuty:
    """Implements domain.ports.Pager: sends events to PAGERDUTY_EVENTS_URL."""

    def __init__(self, routing_key: str, events_url: str, source: str = "gpubot", **http_options) -> None:
        self._routing_key, self.source = routing_key, source
        parts = urlsplit(events_url)
        self._path = parts.path or "/"
        self._http = VendorHttp("pagerduty", f"{parts.scheme}://{parts.netloc}", {"Content-Type": "application/json"},
                                **http_options)

    def page(self, kind: str, key: str, summary: str, severity: str = "error", resolve: bool = False
             ) -> PageOutcome:
        """Send one event: accepted (202), rejected (400: never send it again) or failed (send it again later)."""
        event = {"routing_key": self._routing_key, "event_action": "resolve" if resolve else "trigger",
                 "dedup_key": key}
        if not resolve:
            event["payload"] = {"summary": summary[:1024], "source": self.source,
                                "severity": _SEVERITY.get(severity, "error"), "component": kind}
        try:
            response = self._http.request("POST", self._path, json=event)
        except ProviderError as exc:
            log.warning("PagerDuty did not take %s %s: %s", event["event_action"], key, exc.detail)
            return "failed"
        if response.status_code == 202:
            return "accepted"
        if response.status_code == 400:
            log.error("PagerDuty rejected %s %s for good (HTTP 400): %s", event["event_action"], key,
                      response.text[:500])
            return "rejected"
        log.warning("PagerDuty answered %s %s with HTTP %s", event["event_action"], key, response.status_code)
        return "failed"
