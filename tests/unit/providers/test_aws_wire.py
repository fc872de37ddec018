"""What the AWS adapter sends (providers/aws/wire.py): RunInstances' idempotency token."""

from __future__ import annotations

from decimal import Decimal

from gpubot.domain.model import Offer
from gpubot.providers.aws.wire import client_token


def test_client_token_is_stable_per_offer_and_zone_and_short() -> None:
    offer = Offer("aws", "us-east-1", "h100", 8, Decimal("6.88"), "USD", ref="p5.48xlarge")
    assert client_token("gpubot-12-abc", offer, "us-east-1a") == "gpubot-12-abc:p5.48xlarge:us-east-1a"
    assert client_token("gpubot-12-abc", offer, "us-east-1b") != client_token("gpubot-12-abc", offer, "us-east-1a")
    spot = Offer("aws", "us-east-1", "h100", 8, Decimal("6.88"), "USD", spot=True, ref="p5.48xlarge")
    assert client_token("gpubot-12-abc", spot, "us-east-1a").endswith(":spot")
    assert len(client_token("gpubot-1-" + "x" * 80, offer, "us-east-1a")) == 64

