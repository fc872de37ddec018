"""The simulated cloud interrupts spot machines at its configured rate, the same way for the same seed."""

from __future__ import annotations

from datetime import UTC, datetime
from statistics import mean

from gpubot.domain.model import OfferRequest, instance_tag
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.providers.simulated.config import SimulatedConfig

START = datetime(2026, 11, 2, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self) -> None:
        self.t = START

    def __call__(self) -> float:
        return self.t


def cloud(rate: float, seed: int | None = 7, clock: Clock | None = None) -> SimulatedCloud:
    policy = SimulatedConfig(seed=seed, spot_interruptions_per_hour=rate,
                            stock=[{"gpu": "a100", "region": "s-1", "count": 100_000, "price": 2, "spot_price": 1}])
    return SimulatedCloud("s", policy, clock=clock or Clock())


def lifetimes_h(sim: SimulatedCloud, n: int, spot: bool = True) -> list[float | None]:
    offer = sim.offers(OfferRequest("a100", 1, spot=spot))[0]
    launched = [sim.launch(offer, LaunchSpec(i, instance_tag(i, "x"))) for i in range(n)]
    at = [sim.interruption_at(i.instance_id) for i in launched]
    return [(a.timestamp() - START) / 3600 if a else None for a in at]


def test_spot_machines_last_one_over_the_rate_on_average_and_the_same_for_the_same_seed():
    drawn = lifetimes_h(cloud(0.05), 2000)
    assert abs(mean(drawn) - 20) < 2  # exponential, mean 1/λ = 20 h (standard error ≈ 0.45 h)
    assert lifetimes_h(cloud(0.05), 2000) == drawn
    assert lifetimes_h(cloud(0.05, seed=8), 50) != drawn[:50]
    assert lifetimes_h(cloud(0.05, seed=None), 50) == lifetimes_h(cloud(0.05, seed=0), 50)  # unset: seed 0


def test_on_demand_machines_and_a_zero_rate_are_never_interrupted():
    assert set(lifetimes_h(cloud(0.05), 20, spot=False)) == {None}
    assert set(lifetimes_h(cloud(0.0), 20)) == {None}


def test_at_its_time_a_machine_is_preempted_gives_back_its_gpus_and_stays_listed_until_terminated():
    clock = Clock()
    sim = cloud(1.0, clock=clock)
    offer = sim.offers(OfferRequest("a100", 4, spot=True))[0]
    machine = sim.launch(offer, LaunchSpec(1, "gpubot-1-x"))
    when = sim.interruption_at(machine.instance_id)
    clock.t = when.timestamp() - 1
    assert sim.describe(machine).status == "running" and sim.telemetry(machine)
    clock.t = when.timestamp() + 600
    [listed] = sim.list_owned()
    assert (listed.status, listed.ready, listed.stopped_at) == ("preempted", False, when)
    assert sim.telemetry(machine) == [] and sim.run_seconds(machine.instance_id) == when.timestamp() - START
    assert sim.interruption_at(machine.instance_id) is None
    sim.terminate(listed)
    sim.terminate(listed)
    assert sim.list_owned() == [] and sim.describe(machine).status == "terminated"
    assert sim._stock[("a100", "s-1")] == 100_000  # given back once, at the interruption
