"""PagerDuty Events API v2: trigger and resolve on-call incidents with a stable dedup key."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from domain.errors import ProviderError
from providers.http import VendorHttp

__all__ = ["PagerDuty"]

log = logging.getLogger(__name__)

_SEVERITY = {"error": "error", "warning": "warning", "critical": "critical", "info": "info"}


class PagerDuty:
    """Sends events to PAGERDUTY_EVENTS_URL; retries 429/5xx through the shared HTTP client."""

    def __init__(self, routing_key: str, events_url: str, source: str = "gpubot", **http_options) -> None:
        self._routing_key, self.source = routing_key, source
        parts = urlsplit(events_url)
        self._path = parts.path or "/"
        self._http = VendorHttp("pagerduty", f"{parts.scheme}://{parts.netloc}", {"Content-Type": "application/json"},
                                **http_options)

    def __call__(self, *, kind: str, key: str, summary: str, severity: str = "error", resolve: bool = False
                 ) -> bool:
        """Send one event; True when PagerDuty accepted it."""
        event = {"routing_key": self._routing_key, "event_action": "resolve" if resolve else "trigger",
                 "dedup_key": key}
        if not resolve:
            event["payload"] = {"summary": summary[:1024], "source": self.source,
                                "severity": _SEVERITY.get(severity, "error"), "component": kind}
        try:
            response = self._http.request("POST", self._path, json=event)
        except ProviderError as exc:
            log.warning("PagerDuty did not take %s: %s", key, exc.detail)
            return False
        if response.status_code != 202:
            log.warning("PagerDuty refused %s: HTTP %s", key, response.status_code)
        return response.status_code == 202
