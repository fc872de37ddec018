"""Ask every provider for offers at once; a slow or failing one never delays the rest past its timeout."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from gpubot.domain.errors import ProviderError
from gpubot.domain.model import Offer, OfferRequest
from gpubot.domain.ports import Provider
from gpubot.domain.probe_failures import internal_error, no_answer, provider_said
from gpubot.scheduling.memory import OfferCache

__all__ = ["InlineExecutor", "ProbeResult", "probe_offers"]

log = logging.getLogger("gpubot.scheduling.acquisition.probe")  # the logger name operators already filter on

_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="probe")


class InlineExecutor(Executor):
    """Runs each probe in the caller's thread, one after another: for clouds that answer in-process on a virtual
    clock (the replay), where threads overlap no waiting and only add a hand-off to every probe."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """`fn(*args, **kwargs)` run now; its result or exception in a finished Future."""
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed over like a pool would: probe_offers sorts out what it was
            future.set_exception(exc)
        return future


@dataclass(frozen=True)
class ProbeResult:
    """Offers gathered from every provider, and why the others gave none."""

    offers: list[Offer]
    failures: dict[str, str]
    cached: bool = False  # served from the OfferCache, not probed just now


def _ask(provider: Provider, request: OfferRequest) -> list[Offer]:
    return provider.offers(request)


def probe_offers(providers: dict[str, Provider], request: OfferRequest, timeout: float,
                 cache: OfferCache | None = None, fresh: bool = False,
                 observe: Callable[[str, str | None], None] | None = None,
                 executor: Executor | None = None) -> ProbeResult:
    """Offers for `request` from all `providers`, concurrently, each bounded by `timeout` seconds.

    `observe(provider, error kind or None)` hears the outcome of every real probe (not of cache hits).
    `executor` runs the probes (default: a shared pool of 16 threads).
    """
    key = (request.gpu, request.count, request.spot, request.cuda, tuple(sorted(providers)))
    if cache and not fresh and (hit := cache.get(key)):
        return replace(hit, cached=True)
    futures = {(executor or _POOL).submit(_ask, p, request): name for name, p in providers.items()}
    done, pending = wait(futures, timeout=timeout)
    offers: list[Offer] = []
    failures = {futures[f]: no_answer(timeout) for f in pending}
    kinds: dict[str, str | None] = dict.fromkeys(failures, "transient")
    for future in done:
        name = futures[future]
        kinds[name] = None
        try:
            offers.extend(future.result())
        except ProviderError as exc:
            failures[name], kinds[name] = provider_said(exc.kind, exc.detail), exc.kind
        except Exception as exc:  # an adapter bug must not sink the probe of every other cloud
            log.exception("offers() of %s failed", name)
            failures[name], kinds[name] = internal_error(type(exc).__name__), "transient"
    for name, kind in kinds.items():
        if observe:
            observe(name, kind)
    result = ProbeResult(offers, failures)
    if cache:
        cache.put(key, result)
    return result
