"""The agent file gpubot serves to the machines it rents, and its SHA-256, read once at start."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files

__all__ = ["AgentFile", "load_agent_file"]


@dataclass(frozen=True)
class AgentFile:
    """The exact bytes served at AGENT_PATH and their SHA-256 (hex), which start commands check."""

    body: bytes
    sha256: str


def load_agent_file() -> AgentFile:
    """gpubot/agent.py as it is installed: the same code `gpubot agent` runs."""
    body = files("gpubot").joinpath("agent.py").read_bytes()
    return AgentFile(body, hashlib.sha256(body).hexdigest())
