"""The /metrics registry of a running process: the declared metrics plus the ledger gauges."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import REGISTRY, SLACK_ACK_SECONDS, UP
from gpubot.scheduling.money.ledger_metrics import LedgerCollector

__all__ = ["Metrics"]


class Metrics:
    """What `/metrics` serves."""

    def __init__(self, engine: Engine) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_Declared())
        self.registry.register(LedgerCollector(engine))
        self.slack_ack_seconds = SLACK_ACK_SECONDS
        UP.set(1)


class _Declared:
    """Exposes the module-level registry of scheduling.metrics through this one."""

    def collect(self):
        yield from REGISTRY.collect()
