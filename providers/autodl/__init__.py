"""AutoDL (autodl.com): GPU containers through the Elastic Deployment API."""

from __future__ import annotations

from gpubot.providers.autodl.config import AutoDLConfig, AutoDLSettings
from gpubot.providers.registry import BuildContext, ProviderKind, required_secret

__all__ = ["KIND"]


def _build(name: str, config: AutoDLConfig, context: BuildContext):
    settings = context.read_settings(AutoDLSettings)
    token = required_secret(settings, "autodl_token")
    from gpubot.providers.autodl.adapter import AutoDL

    return AutoDL(name, config, token, settings.autodl_api_url)


KIND = ProviderKind(name="autodl", config=AutoDLConfig, settings=AutoDLSettings, build=_build, machine="container",
                    rented=True, default_image=True, order=10)
