"""`[providers.NAME]` of kind "runpod" and the environment variables RunPod needs."""

from __future__ import annotations

from typing import Literal

from gpubot.domain.policy_sections import ImageProviderPolicy
from gpubot.providers.registry import KindSettings
from pydantic import SecretStr

__all__ = ["RunPodConfig", "RunPodSettings"]


class RunPodConfig(ImageProviderPolicy):
    """RunPod: the common keys and the pod image (`regions` are data centres, one offer each)."""

    kind: Literal["runpod"] = "runpod"


class RunPodSettings(KindSettings):
    """RUNPOD_API_KEY (sent as a Bearer token) and the REST v2 API's address."""

    runpod_api_key: SecretStr | None = None
    runpod_api_url: str = "https://api.runpod.io/v2"
