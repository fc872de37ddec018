"""Slack's request signature, checked once for every signed body gpubot takes in (its HTTP route and the demo
console), before anything else reads it; Bolt's own check is off (bot/app.py), so this is the one place."""

from __future__ import annotations

from pydantic import SecretStr
from slack_sdk.signature import SignatureVerifier

__all__ = ["is_signed"]


def is_signed(secret: SecretStr | str | None, body: str, headers: dict) -> bool:
    """Whether `body` carries a valid Slack signature for `secret`, made within Slack's five minutes."""
    value = secret.get_secret_value() if isinstance(secret, SecretStr) else (secret or "")
    if not value:  # no secret, no signature can be checked: refuse rather than accept anything
        return False
    try:
        return SignatureVerifier(value).is_valid_request(body, headers)
    except ValueError:  # a timestamp that is not a number
        return False
