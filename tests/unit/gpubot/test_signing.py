"""The one signature check: what Slack signed with our secret in the last five minutes, and nothing else."""

from __future__ import annotations

import time

import pytest
from pydantic import SecretStr

from gpubot.sandbox.requests import sign
from gpubot.signing import is_signed

BODY = b"command=%2Fgpu&text=status"


def test_a_body_signed_with_our_secret_now_is_signed():
    assert is_signed(SecretStr("s3cret-value"), BODY.decode(), sign("s3cret-value", BODY))
    assert is_signed("s3cret-value", BODY.decode(), sign("s3cret-value", BODY))


@pytest.mark.parametrize(("secret", "headers"), [
    ("s3cret-value", sign("another-secret", BODY)),  # someone else's secret
    ("s3cret-value", sign("s3cret-value", BODY, timestamp=int(time.time()) - 301)),  # replayed after 5 minutes
    ("s3cret-value", {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=00"}),  # not a number
    ("s3cret-value", {}),  # unsigned
    ("", sign("", BODY)),  # no secret configured: nothing can be checked, so nothing passes
    (None, sign("", BODY)),
], ids=["other-secret", "replayed", "bad-timestamp", "unsigned", "empty-secret", "no-secret"])
def test_anything_else_is_not(secret, headers):
    assert not is_signed(secret, BODY.decode(), headers)


def test_a_changed_body_is_not_signed():
    assert not is_signed("s3cret-value", BODY.decode() + "&x=1", sign("s3cret-value", BODY))
