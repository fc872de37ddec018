"""Replay settings (the `[replay]` table of the config) and the policies compared, each an overlay.

An overlay is a TOML fragment (a nested dict) merged onto the whole config document before validation, so it
may change any policy key and the `[replay]` keys (e.g. `replay.spot = true`). The built-in overlays are
derived from the providers the config declares; `[replay.policies.NAME]` adds or replaces one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated

from gpubot.domain.durations import format_duration
from gpubot.domain.errors import ConfigError
from gpubot.domain.policy import Policy, config_error
from gpubot.domain.policy_sections import Duration
from gpubot.domain.replay_bound import EXACT_LIMIT
from gpubot.providers.registry import Replayable, kind_named, policy_from_dict
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["FORCED", "SPOT_INTERRUPTIONS_PER_HOUR", "WAIT_FOR_CHEAPER", "ReplayConfig", "builtin_overlays", "merge",
           "policy_names", "replay_config", "replay_settings"]

# What every replay sets whatever the policy: nobody approves bookings or pushes an agent in a replay,
# the trace's jobs already ran (so no per-person GPU limit), and the trace, not the simulator, says how
# busy the GPUs were.
FORCED = {"budget": {"over_budget": "warn"}, "booking": {"max_gpus_per_user": 1_000_000}}

# Spot interruptions per machine-hour that the `spot` policy gives simulated clouds selling spot, unless a cloud
# sets its own (docs/replay.md explains the figure): one interruption per 20 machine-hours on average.
SPOT_INTERRUPTIONS_PER_HOUR = 0.05

# How long the `wait-cheaper` policy lets a booking wait for a cheaper offer when `[replay] wait_for_cheaper` is
# unset: this share of `acquire.give_up_after` (the wait must end before the give-up; 2 h at the default 4 h).
WAIT_FOR_CHEAPER = 0.5


class ReplayConfig(BaseModel):
    """`[replay]`: how the trace's people are modelled."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    over_booking: Annotated[float, Field(gt=0)] = 1.5
    release_when_done: Annotated[float, Field(ge=0, le=1)] = 0.5
    start: datetime = datetime(2026, 1, 5, tzinfo=UTC)
    gpu_types: dict[str, str] = {}
    baseline_provider: str | None = None
    spot: bool = False
    spot_max_hours: Annotated[float, Field(gt=0)] = 24
    spot_interruptions_per_hour: Annotated[float, Field(ge=0)] = SPOT_INTERRUPTIONS_PER_HOUR
    checkpoint_every: Duration = timedelta(minutes=30)  # an interrupted job resumes from its last checkpoint
    # A spot booking still waiting this long is booked on demand (unset: `[spot] fallback_after`, domain.spot).
    spot_fallback_after: Duration | None = None
    # The replayed agent reports compute processes (one per GPU while the job works, none once it ended), so the
    # engine's no-process rule applies from each job's end: the `no-process-reclaim` policy and those after it.
    sees_processes: bool = False
    # The `wait-cheaper` policy's `[acquire] wait_for_cheaper`: how long a booking waits for a cheaper offer that
    # is taken but expected free in time, rather than take a dearer free one at once (unset: half of
    # acquire.give_up_after).
    wait_for_cheaper: Duration | None = None
    busy_util: Annotated[float, Field(ge=0, le=100)] = 80
    # The lower bound is solved per job while its program has at most this many variables, else pooled by class
    # (a weaker bound, faster): docs/replay.md, "The lower bound".
    exact_bound_limit: Annotated[int, Field(ge=0)] = EXACT_LIMIT
    seed: int = 0
    policies: dict[str, dict] = {}


def merge(base: Mapping, overlay: Mapping) -> dict:
    """`overlay` merged into a copy of `base`, tables recursively, other values replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _team_owned(table: Mapping) -> bool:
    return getattr(kind_named(table.get("kind")), "team_owned", False)


def _replay_of(table: Mapping) -> Replayable | None:
    return getattr(kind_named(table.get("kind")), "replay", None)


def _enabled(providers: Mapping[str, Mapping], pool: bool) -> list[str]:
    """The enabled providers that are the team's own machines (`pool`), or the others."""
    return [n for n, p in providers.items() if p.get("enabled", True) and _team_owned(p) == pool]


def builtin_overlays(document: Mapping, baseline: str | None = None) -> dict[str, dict]:
    """baseline (one cloud, no reclaim) → cheapest-first → idle-reclaim → no-process-reclaim → pool → spot, each
    adding one thing; then wait-cheaper, which adds `[acquire] wait_for_cheaper` to pool (or no-process-reclaim
    without a pool), not to spot."""
    providers = document.get("providers", {})
    clouds, pools = _enabled(providers, False), _enabled(providers, True)
    if not clouds:
        raise ConfigError("providers", "(none)", "at least one enabled provider that is not a pool")
    first = baseline or clouds[0]
    if first not in clouds:
        raise ConfigError("replay.baseline_provider", first, f"one of {', '.join(clouds)}")
    off = {name: {"enabled": False} for name in pools}
    cheapest = {"acquire": {"strategy": "cheapest"}}
    overlays = {
        "baseline": {"providers": {**off, **{n: {"enabled": False} for n in clouds if n != first}},
                     "idle": {"action": "remind"}},
        "cheapest-first": {"providers": off, **cheapest, "idle": {"action": "remind"}},
        "idle-reclaim": {"providers": off, **cheapest, "idle": {"action": "release"}},
        "no-process-reclaim": {"providers": off, **cheapest, "idle": {"action": "release"},
                               "replay": {"sees_processes": True}},
    }
    if pools:
        overlays["pool"] = {**cheapest, "idle": {"action": "release"}, "replay": {"sees_processes": True}}
    if _spot_sellers(providers):
        interrupted = {"providers": _interruptions(document), "replay": {"spot": True}}
        overlays["spot"] = merge(overlays.get("pool", overlays["no-process-reclaim"]), interrupted)
    overlays["wait-cheaper"] = merge(overlays.get("pool", overlays["no-process-reclaim"]),
                                     {"acquire": {"wait_for_cheaper": _wait_for_cheaper(document)}})
    return overlays


def _wait_for_cheaper(document: Mapping) -> str:
    """The wait-cheaper policy's wait: `[replay] wait_for_cheaper`, else WAIT_FOR_CHEAPER of
    `acquire.give_up_after`."""
    if (wait := document.get("replay", {}).get("wait_for_cheaper")) is not None:
        return str(wait)
    give_up = document.get("acquire", {}).get("give_up_after", "4h")
    try:
        limit = Policy.model_validate({"acquire": {"give_up_after": give_up}}).acquire.give_up_after
    except ValidationError:
        limit = timedelta(hours=4)  # the policy's own validation names the bad give_up_after
    return format_duration(limit * WAIT_FOR_CHEAPER)


def _spot_sellers(providers: Mapping[str, Mapping]) -> list[str]:
    return [n for n, p in providers.items() if (replay := _replay_of(p)) and replay.sells_spot(p)]


def _interruptions(document: Mapping) -> dict:
    """The spot policy's interruption rate on every cloud selling spot that does not set its own."""
    providers = document.get("providers", {})
    rate = document.get("replay", {}).get("spot_interruptions_per_hour", SPOT_INTERRUPTIONS_PER_HOUR)
    keys = {name: _replay_of(providers[name]).interrupt(providers[name], rate) for name in _spot_sellers(providers)}
    return {name: interrupt for name, interrupt in keys.items() if interrupt}


def _overlays(document: Mapping) -> dict[str, dict]:
    replay = document.get("replay", {})
    return {**builtin_overlays(document, replay.get("baseline_provider")), **replay.get("policies", {})}


def policy_names(document: Mapping) -> list[str]:
    """The policies a config compares, in order."""
    return list(_overlays(document))


def _quiet_simulators(document: Mapping) -> dict:
    """The keys that leave how busy the GPUs are to the trace, on every cloud whose kind has such keys."""
    providers = document.get("providers", {})
    quiet = {name: dict(replay.quiet) for name, p in providers.items() if (replay := _replay_of(p))}
    return {"providers": {name: keys for name, keys in quiet.items() if keys}}


def replay_config(document: Mapping, name: str) -> tuple[Policy, ReplayConfig]:
    """The validated policy and replay settings of policy `name`: the document, its overlay, then FORCED."""
    overlays = _overlays(document)
    if name not in overlays:
        raise ConfigError("--policy", name, f"one of {', '.join(overlays)}")
    merged = merge(merge(merge(document, overlays[name]), FORCED), _quiet_simulators(document))
    replay = merged.pop("replay", {})
    settings = replay_settings(replay)
    if replay.get("spot_fallback_after") is not None:  # the engine's own rule then uses it: one rule, one limit
        merged = merge(merged, {"spot": {"fallback_after": replay["spot_fallback_after"]}})
    return policy_from_dict(merged), settings


def replay_settings(table: Mapping) -> ReplayConfig:
    """A `[replay]` table validated; a problem raises ConfigError naming the first bad key."""
    try:
        return ReplayConfig.model_validate(table)
    except ValidationError as exc:
        raise config_error(exc, "replay") from None
