"""`[providers.NAME]` of kind "autodl" and the environment variables AutoDL needs."""

from __future__ import annotations

from typing import Literal

from gpubot.domain.policy_sections import ImageProviderPolicy
from gpubot.providers.registry import KindSettings
from pydantic import SecretStr

__all__ = ["AutoDLConfig", "AutoDLSettings"]


class AutoDLConfig(ImageProviderPolicy):
    """AutoDL: the common keys and the container image (`regions` are AutoDL's data centres, e.g. westDC2)."""

    kind: Literal["autodl"] = "autodl"


class AutoDLSettings(KindSettings):
    """AUTODL_TOKEN (控制台 → 设置 → 开发者Token) and the API's address."""

    autodl_token: SecretStr | None = None
    autodl_api_url: str = "https://api.autodl.com"
