"""Loading the team policy file: TOML, validated (each provider table against its kind's model in
providers/registry.py), with built-in defaults when the file is absent."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from gpubot.domain.errors import ConfigError
from gpubot.domain.policy import Policy
from gpubot.providers.registry import policy_from_dict, policy_problems
from gpubot.scheduling.replay.setup import replay_settings

__all__ = ["load_policy", "policy_problems_in"]


def _defaults_text() -> str:
    return resources.files("gpubot").joinpath("defaults.toml").read_text(encoding="utf-8")


def load_policy(path: str | Path | None) -> tuple[Policy, str]:
    """The policy from `path` (or built-in defaults when it does not exist), and where it came from."""
    file = Path(path) if path else None
    if file is None or not file.exists():
        return policy_from_dict(tomllib.loads(_defaults_text())), "built-in defaults"
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(file), "(file)", f"valid TOML ({exc})") from None
    # One file may serve both the bot and `gpubot replay`: its [replay] table is checked here, then left out.
    replay = raw.pop("replay", None)
    policy = policy_from_dict(raw)
    if replay is not None:
        replay_settings(replay)
    return policy, str(file)


def policy_problems_in(path: str | Path) -> list[ConfigError]:
    """Every problem of the policy file at `path` at once (an unreadable file is one), for `gpubot check-config`."""
    file = Path(path)
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        return [ConfigError(str(file), "(file)", f"valid TOML ({exc})")]
    replay = raw.pop("replay", None)
    problems = policy_problems(raw)
    if replay is not None:
        try:
            replay_settings(replay)
        except ConfigError as exc:
            problems.append(exc)
    return problems
