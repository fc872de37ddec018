"""A running gpubot for the end-to-end tests of this folder (one per module)."""

from __future__ import annotations

import pytest

from tests.e2e.server_kit import RunningBot, config, offer, serving, sim

CONFIG = config(alerts=True, budget={"monthly": 5000},
                providers={"sim": sim(offer(price=2.42), offer("h100", price=3.99))})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    """gpubot serve with the simulated cloud and a fake Slack Web API."""
    with serving(tmp_path_factory.mktemp("e2e"), CONFIG) as running:
        yield running
