"""The log filter blanks configured secrets and any agent token, even one a vendor echoes back."""

from __future__ import annotations

import logging

from gpubot.scheduling.agent import TOKEN_PREFIX

from gpubot.logs import RedactSecrets


def record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("gpubot.providers.runpod.adapter", logging.WARNING, __file__, 1, message, args, None)


def test_agent_tokens_are_blanked_wherever_they_appear() -> None:
    token = TOKEN_PREFIX + "Zm9vYmFyLWJhei0xMjM0NTY3ODkwYWJj"
    entry = record("%s: unexpected answer HTTP %s: %s", "runpod", 500,
                   f'{{"detail": "bad env", "env": {{"GPUBOT_AGENT_TOKEN": "{token}"}}}}')
    assert RedactSecrets(["xoxb-secret-value"]).filter(entry)
    assert token not in entry.getMessage() and "gpa_***" in entry.getMessage()


def test_configured_secrets_are_still_blanked() -> None:
    entry = record("token xoxb-secret-value refused")
    RedactSecrets(["xoxb-secret-value"]).filter(entry)
    assert entry.getMessage() == "token *** refused"
