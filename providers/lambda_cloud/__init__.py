"""Lambda (cloud.lambda.ai): GPU virtual machines through its public cloud API. The folder is not named `lambda`,
a word Python keeps for itself; the kind is."""

from __future__ import annotations

from gpubot.providers.lambda_cloud.config import LambdaConfig, LambdaSettings
from gpubot.providers.registry import BuildContext, ProviderKind, required_secret

__all__ = ["KIND"]


def _build(name: str, config: LambdaConfig, context: BuildContext):
    settings = context.read_settings(LambdaSettings)
    key = required_secret(settings, "lambda_api_key")
    from gpubot.providers.lambda_cloud.adapter import LambdaCloud

    return LambdaCloud(name, config, key, settings.lambda_api_url, pacer=context.pacer)  # paced across replicas


KIND = ProviderKind(name="lambda", config=LambdaConfig, settings=LambdaSettings, build=_build, machine="vm",
                    rented=True, default_image=False, order=20)
