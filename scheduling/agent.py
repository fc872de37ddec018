"""The telemetry agent's side of a booking: the tokens it pushes with (only their hashes are kept) and the line
that fetches, checks and runs the agent gpubot serves."""

from __future__ import annotations

import hashlib
import secrets
import shlex
from datetime import timedelta

from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.policy import Policy
from gpubot.domain.ports import AgentLaunch
from gpubot.scheduling.engine import Engine
from sqlmodel import Session

__all__ = ["AGENT_PATH", "TOKEN_PREFIX", "agent_command", "agent_interval", "agent_launch", "issue_agent_token",
           "mint_agent_token", "token_hash"]

AGENT_PATH = "/agent/gpubot-agent.py"  # where gpubot serves its agent, under GPUBOT_PUBLIC_URL
TOKEN_PREFIX = "gpa_"  # agent tokens are recognisable, so that logs can blank any that a vendor echoes


def token_hash(token: str) -> str:
    """How agent tokens are stored: SHA-256, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def mint_agent_token() -> tuple[str, str]:
    """A fresh random agent token and the hash the ledger keeps of it (for a caller that stores it itself)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(24)
    return token, token_hash(token)


def issue_agent_token(booking_id: int, *, session: Session, for_dm: bool = False) -> str:
    """A fresh random agent token for a booking (only its hash is kept): the start command's, or (`for_dm`) the
    one the ready DM gives, which whichever replica sends that DM mints then. Every token a DM gave stays valid
    until the booking ends, as does the start command's: a delivery attempt that turns out to have been sent
    already (in doubt, found, not posted again) leaves the token the owner sees working."""
    token, hashed = mint_agent_token()
    telemetry_repo.set_token_hash(booking_id, hashed, session=session, for_dm=for_dm)
    return token


def agent_interval(policy: Policy) -> float:
    """Seconds between the agent's pushes: a quarter of the shortest window that reads them (idle, staleness),
    between 1 and 15 s, so short test windows still see several samples."""
    window = min(policy.idle.for_, policy.health.telemetry_stale_after)
    return min(max(window / 4, timedelta(seconds=1)), timedelta(seconds=15)).total_seconds()


def agent_launch(engine: Engine, token: str) -> AgentLaunch | None:
    """What a machine needs to fetch and run the agent gpubot serves; None when this gpubot serves none."""
    if not engine.agent_sha256:
        return None
    base = engine.public_url.rstrip("/")
    return AgentLaunch(base, base + AGENT_PATH, engine.agent_sha256, token, agent_interval(engine.policy))


def agent_command(agent: AgentLaunch) -> str:
    """The line an owner can paste on the machine: download the agent, check its SHA-256, run it."""
    url, name = shlex.quote(agent.download_url), "gpubot-agent.py"
    return (f"curl -fsSL --max-time 60 -o {name} {url} && echo '{agent.sha256}  {name}' | sha256sum -c - && "
            f"(GPUBOT_AGENT_TOKEN={shlex.quote(agent.token)} nohup python3 {name} --url "
            f"{shlex.quote(agent.bot_url)} --interval {agent.interval:g} >gpubot-agent.log 2>&1 &)")
