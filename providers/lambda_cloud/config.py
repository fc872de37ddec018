"""`[providers.NAME]` of kind "lambda" and the environment variables Lambda needs."""

from __future__ import annotations

from typing import Literal

from gpubot.domain.policy_sections import Duration, ProviderPolicy
from gpubot.providers.registry import KindSettings
from pydantic import SecretStr

__all__ = ["LambdaConfig", "LambdaSettings"]


class LambdaConfig(ProviderPolicy):
    """Lambda: the common keys, the SSH key to register on its VMs, and its pace."""

    kind: Literal["lambda"] = "lambda"
    ssh_key_name: str | None = None  # a key registered with Lambda (default "gpubot")
    request_interval: Duration | None = None  # between any two API calls (default: Lambda's 1 s)
    launch_interval: Duration | None = None  # between two launches (default: Lambda's 12 s)


class LambdaSettings(KindSettings):
    """LAMBDA_API_KEY (sent as a Bearer token) and the API's address."""

    lambda_api_key: SecretStr | None = None
    lambda_api_url: str = "https://cloud.lambda.ai/api/v1"
