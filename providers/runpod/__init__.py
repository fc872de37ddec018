"""RunPod: GPU pods (containers) through its REST v2 API."""

from __future__ import annotations

from gpubot.providers.registry import BuildContext, ProviderKind, required_secret
from gpubot.providers.runpod.config import RunPodConfig, RunPodSettings

__all__ = ["KIND"]


def _build(name: str, config: RunPodConfig, context: BuildContext):
    settings = context.read_settings(RunPodSettings)
    key = required_secret(settings, "runpod_api_key")
    from gpubot.providers.runpod.adapter import RunPod

    return RunPod(name, config, key, settings.runpod_api_url)


KIND = ProviderKind(name="runpod", config=RunPodConfig, settings=RunPodSettings, build=_build, machine="container",
                    rented=True, default_image=True, order=50)
