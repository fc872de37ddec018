"""The HTTP client every HTTP provider adapter uses: the one owner of retries for 429, 5xx and timeouts.

A request is retried with exponential backoff and jitter (tenacity) when the provider answers 429 or 5xx or the
connection fails. Non-idempotent calls (launches) are retried only when the request surely did not run: a
refused connection, or a 429/503 answer — or an answer the vendor documents as safe to repeat for that call
(`repeatable`, e.g. RunPod's create: "5xx: retry the same candidate"). When retries run out the failure becomes
RateLimited or Transient. Other answers go back to the adapter, whose `classify` turns vendor error bodies into
our error tree. A `pace` hook, when given, runs before every attempt (retries included), so a vendor's request
rate limit is kept by the one place that sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from gpubot.domain.errors import ProviderError, RateLimited, Transient
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

__all__ = ["VendorHttp", "attempts_of", "retry_after_seconds", "vendor_shape"]

log = logging.getLogger(__name__)

_RETRY_STATUSES = {429, 500, 502, 503, 504}
_SAFE_TO_REPEAT_STATUSES = {429, 503}
MAX_RETRY_AFTER = 10.0
_BACKOFF = wait_exponential_jitter(multiplier=0.2, max=2.0, jitter=0.2)


@contextmanager
def vendor_shape(provider: str) -> Iterator[None]:
    """Turn an answer of unexpected shape (a missing key, a wrong type) into Transient."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise Transient(provider, f"unexpected answer: {exc!r}") from exc


class _Retryable(Exception):
    def __init__(self, error: ProviderError, wait: float | None = None, request_ran: bool = True):
        super().__init__(str(error))
        self.error, self.wait, self.request_ran = error, wait, request_ran


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds, when present and numeric."""
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def attempts_of(response: httpx.Response) -> int:
    """How many times VendorHttp sent the request that got this response (1: no retry)."""
    return int(response.extensions.get("gpubot_attempts", 1))


class VendorHttp:
    """A thin httpx client bound to one provider's base URL and auth headers."""

    def __init__(self, provider: str, base_url: str, headers: dict[str, str], *, timeout: float = 10.0,
                 attempts: int = 3, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] | None = None,
                 pace: Callable[[str, str], None] | None = None) -> None:
        self.provider = provider
        self.attempts = attempts
        self._client = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout,
                                    transport=transport, trust_env=False)
        self._sleep, self._pace = sleep, pace

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def request(self, method: str, path: str, *, idempotent: bool = True, repeatable: frozenset[int] = frozenset(),
                **kwargs: Any) -> httpx.Response:
        """Send a request, retrying transient failures; return the final non-retryable response.

        `repeatable`: statuses the vendor documents as safe to send again for this (non-idempotent) call."""
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._should_retry(exc, idempotent)),
            reraise=True,
            **({"sleep": self._sleep} if self._sleep else {}),
        )
        try:
            response = retrying(self._send_once, method, path.lstrip("/"), repeatable, **kwargs)
        except _Retryable as exc:
            raise exc.error from None
        response.extensions["gpubot_attempts"] = retrying.statistics.get("attempt_number", 1)
        return response

    def _send_once(self, method: str, path: str, repeatable: frozenset[int], **kwargs: Any) -> httpx.Response:
        if self._pace:
            self._pace(method, path)
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.ConnectError as exc:
            raise _Retryable(Transient(self.provider, f"connection failed: {exc}"), request_ran=False) from exc
        except (httpx.TimeoutException, httpx.TransportError, httpx.DecodingError, httpx.TooManyRedirects) as exc:
            raise _Retryable(Transient(self.provider, f"{type(exc).__name__} on {method} {path}")) from exc
        if response.status_code in _RETRY_STATUSES:
            raise _Retryable(self._status_error(response), retry_after_seconds(response),
                             request_ran=response.status_code not in _SAFE_TO_REPEAT_STATUSES | repeatable)
        return response

    def _status_error(self, response: httpx.Response) -> ProviderError:
        if response.status_code == 429:
            return RateLimited(self.provider, "rate limited (HTTP 429)", retry_after_seconds(response))
        log.warning("%s answered HTTP %s: %s", self.provider, response.status_code, response.text[:500])
        return Transient(self.provider, f"HTTP {response.status_code}")

    @staticmethod
    def _should_retry(exc: BaseException, idempotent: bool) -> bool:
        if not isinstance(exc, _Retryable):
            return False
        if exc.wait is not None and exc.wait > MAX_RETRY_AFTER:
            return False
        return idempotent or not exc.request_ran

    @staticmethod
    def _wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retryable) and exc.wait is not None:
            return exc.wait
        return _BACKOFF(state)
