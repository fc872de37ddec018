"""Replay: feed a trace of bookings through the real engine on a virtual clock, one policy at a time."""

from scheduling.replay.run import ReplayOutcome, replay_policy
from scheduling.replay.runner import ReplayInput
from scheduling.replay.setup import ReplayConfig, policy_names, replay_config

__all__ = ["ReplayConfig", "ReplayInput", "ReplayOutcome", "policy_names", "replay_config", "replay_policy"]
