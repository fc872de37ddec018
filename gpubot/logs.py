"""Logging set-up: JSON or console lines, and a filter that blanks every secret value."""

from __future__ import annotations

import json
import logging
import re
import sys

__all__ = ["setup_logging"]


AGENT_TOKEN = re.compile(r"gpa_[A-Za-z0-9_-]{16,}")  # scheduling.telemetry issues them; a vendor may echo one


class RedactSecrets(logging.Filter):
    """Replaces any configured secret value, and any agent token, in a log record with `***`."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if len(s) >= 6]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        for secret in self.secrets:
            message = message.replace(secret, "***")
            if record.exc_text:
                record.exc_text = record.exc_text.replace(secret, "***")
        message = AGENT_TOKEN.sub("gpa_***", message)
        if record.exc_text:
            record.exc_text = AGENT_TOKEN.sub("gpa_***", record.exc_text)
        record.msg, record.args = message, ()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": self.formatTime(record), "level": record.levelname, "logger": record.name,
                 "msg": record.getMessage()}
        if record.exc_text:
            entry["exc"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(level: str, fmt: str, secrets: list[str]) -> None:
    """Configure the root logger once."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else
                         logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # google: at DEBUG, google-cloud-compute logs whole request bodies (a VM's startup-script carries its agent token)
    # alembic: its plugin set-up and one line per migration at INFO; the runtime says the migration in one line
    for noisy in ("apscheduler", "httpx", "httpcore", "uvicorn.access", "botocore", "urllib3", "google", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
