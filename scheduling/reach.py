"""Whether each provider answered its last call: `gpubot_provider_up{provider}` on /metrics, and the providers
/readyz names as down. Every call an adapter makes for this process counts (reconcile's listing, probes,
launches, describes), so the figure is as fresh as the bot's own traffic."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpubot.domain.errors import AuthFailed, ProviderError, Transient
from gpubot.scheduling.metrics import PROVIDER_UP

__all__ = ["Reach", "Watched", "reached", "watch"]

CALLS = ("offers", "launch", "describe", "terminate", "list_owned", "telemetry")


def reached(error: BaseException | None) -> bool:
    """Whether a call that ended with `error` (None: it returned) reached the vendor: a refusal the vendor made
    (no capacity, quota, a bad request, a rate limit) did; bad credentials, timeouts, 5xx and anything
    unexpected did not."""
    if error is None:
        return True
    return isinstance(error, ProviderError) and not isinstance(error, AuthFailed | Transient)


@dataclass(frozen=True)
class Outcome:
    """A provider's last call: whether it reached the vendor, why not, and when."""

    up: bool
    why: str
    at: datetime


class Reach:
    """The last outcome of each provider's calls in this process."""

    def __init__(self, names: list[str], clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, Outcome | None] = dict.fromkeys(names)

    def record(self, provider: str, error: BaseException | None) -> None:
        """Feed one call's outcome (None: it returned)."""
        up = reached(error)
        why = "" if up else (getattr(error, "detail", "") or str(error) or type(error).__name__)
        with self._lock:
            self._last[provider] = Outcome(up, why.splitlines()[0] if why else "", self._clock())
        PROVIDER_UP.labels(provider).set(1 if up else 0)

    def down(self) -> dict[str, str]:
        """The providers whose last call failed, and why."""
        with self._lock:
            return {name: o.why for name, o in self._last.items() if o is not None and not o.up}

    def can_book(self) -> bool:
        """Whether some provider may book: one that answered its last call, or has not been called yet (True when
        there is none to judge)."""
        with self._lock:
            return not self._last or any(o is None or o.up for o in self._last.values())


class Watched:
    """A provider whose every call's outcome is fed to a Reach; everything else passes through unchanged."""

    def __init__(self, name: str, provider: Any, reach: Reach) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_provider", provider)
        object.__setattr__(self, "_reach", reach)

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._provider, attribute)
        if attribute not in CALLS:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = value(*args, **kwargs)
            except Exception as exc:
                self._reach.record(self._name, exc)
                raise
            self._reach.record(self._name, None)
            return result
        return call

    def __setattr__(self, attribute: str, value: Any) -> None:
        setattr(self._provider, attribute, value)


def watch(providers: dict[str, Any], clock: Callable[[], datetime]) -> Reach:
    """Wrap each provider (in place) so that its calls feed the returned Reach."""
    reach = Reach(list(providers), clock)
    for name, provider in list(providers.items()):
        providers[name] = Watched(name, provider, reach)
    return reach
