"""Ask every provider for offers at once; a slow or failing one never delays the rest past its timeout."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

from domain.errors import ProviderError
from domain.model import Offer, OfferRequest
from domain.ports import Provider

__all__ = ["OfferCache", "ProbeResult", "probe_offers"]

log = logging.getLogger(__name__)

_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="probe")


@dataclass(frozen=True)
class ProbeResult:
    """Offers gathered from every provider, and why the others gave none."""

    offers: list[Offer]
    failures: dict[str, str]


class OfferCache:
    """Recent probe results per request, for `ttl` seconds."""

    def __init__(self, ttl: float, monotonic=time.monotonic) -> None:
        self.ttl, self._now = ttl, monotonic
        self._entries: dict[tuple, tuple[float, ProbeResult]] = {}

    def get(self, key: tuple) -> ProbeResult | None:
        """A fresh cached result, or None."""
        entry = self._entries.get(key)
        return entry[1] if entry and self._now() - entry[0] < self.ttl else None

    def put(self, key: tuple, result: ProbeResult) -> None:
        """Remember a result."""
        self._entries[key] = (self._now(), result)


def _ask(provider: Provider, request: OfferRequest) -> list[Offer]:
    return provider.offers(request)


def probe_offers(providers: dict[str, Provider], request: OfferRequest, timeout: float,
                 cache: OfferCache | None = None, fresh: bool = False) -> ProbeResult:
    """Offers for `request` from all `providers`, concurrently, each bounded by `timeout` seconds."""
    key = (request.gpu, request.count, request.spot, tuple(sorted(providers)))
    if cache and not fresh and (hit := cache.get(key)):
        return hit
    futures = {_POOL.submit(_ask, p, request): name for name, p in providers.items()}
    done, pending = wait(futures, timeout=timeout)
    offers: list[Offer] = []
    failures = {futures[f]: f"no answer within {timeout:g}s" for f in pending}
    for future in done:
        name = futures[future]
        try:
            offers.extend(future.result())
        except ProviderError as exc:
            failures[name] = f"{exc.kind}: {exc.detail}"
        except Exception as exc:  # an adapter bug must not sink the probe of every other cloud
            log.exception("offers() of %s failed", name)
            failures[name] = f"error: {type(exc).__name__}"
    result = ProbeResult(offers, failures)
    if cache:
        cache.put(key, result)
    return result
