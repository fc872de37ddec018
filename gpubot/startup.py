"""What `gpubot serve` checks before it starts, each failure said in one line: the port, the secrets, the
database; and the one line it says when it serves."""

from __future__ import annotations

import logging
import socket

from sqlalchemy import create_engine, text

from gpubot.settings import Settings

__all__ = ["announce", "bind", "database_problem", "missing_secrets", "one_line"]

log = logging.getLogger("gpubot.serve")


def bind(host: str, port: int) -> socket.socket | None:
    """A socket bound to host:port (uvicorn listens on it), or None when the port is taken or not allowed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return None
    family, _type, _proto, _name, address = infos[0]
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(address)
    except OSError:
        listening.close()
        return None
    return listening


def missing_secrets(settings: Settings) -> list[str]:
    """Every required setting that is not set, all at once."""
    missing = [] if settings.slack_bot_token else ["SLACK_BOT_TOKEN"]
    if not settings.socket_mode and not settings.slack_signing_secret:
        missing.append("SLACK_SIGNING_SECRET (HTTP mode: requests are always verified)")
    return missing


def database_problem(url: str) -> str | None:
    """One line saying why the database cannot be used (unreachable, not a database, bad URL), or None."""
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 5} if url.startswith("postgresql") else {})
    except Exception as exc:  # a URL SQLAlchemy cannot parse or has no driver for
        return f"database URL is not usable: {type(exc).__name__}: {exc}"
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1 FROM sqlite_master LIMIT 1" if url.startswith("sqlite") else "SELECT 1"))
        return None
    except Exception as exc:  # reported as one line: the driver's own first line, never the traceback
        return f"database {engine.url.render_as_string(hide_password=True)} cannot be used: {one_line(exc)}"
    finally:
        engine.dispose()


def announce(listening: socket.socket, policy_source: str, wired) -> None:
    """The one start-up line: where it listens, which policy file, which providers can be booked."""
    host, port = listening.getsockname()[:2]
    usable = sorted(wired.engine.providers)
    unusable = sorted(set(wired.policy.enabled_providers()) - set(usable))
    metrics_port = wired.settings.metrics_port
    log.info("gpubot serving on http://%s:%d (/metrics on %s) — policy %s — providers usable: %s%s", host, port,
             f"port {metrics_port}" if metrics_port else "this port", policy_source, ", ".join(usable) or "none",
             f"; not usable: {', '.join(unusable)} (gpubot check-config says why)" if unusable else "")


def one_line(exc: BaseException) -> str:
    """The first line of an error (a driver error's own, without SQLAlchemy's SQL and background links)."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__
