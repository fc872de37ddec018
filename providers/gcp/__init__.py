"""Google Cloud Compute Engine: GPU virtual machines through google-cloud-compute (the optional extra
`gpubot[gcp]`)."""

from __future__ import annotations

from gpubot.providers.gcp.config import GcpConfig, GcpSettings
from gpubot.providers.registry import BuildContext, ProviderKind

__all__ = ["KIND"]


def _build(name: str, config: GcpConfig, context: BuildContext):
    try:
        from gpubot.providers.gcp.adapter import GcpCompute
    except ImportError:
        raise LookupError("google-cloud-compute is not installed "
                          "(in gpubot's checkout: pip install '.[gcp]')") from None
    from gpubot.providers.gcp.credentials import gcp_credentials

    if not config.zones:
        raise LookupError(f'no zones: set providers.{name}.zones, e.g. ["us-central1-a", "us-central1-b"]')
    settings = context.read_settings(GcpSettings)
    credentials, default_project = gcp_credentials(settings)
    project = config.project or default_project
    if not project:
        raise LookupError(f"no project: set providers.{name}.project (the credentials name none)")
    return GcpCompute(name, config, project=project, credentials=credentials, api_endpoint=settings.gcp_api_url)


KIND = ProviderKind(name="gcp", config=GcpConfig, settings=GcpSettings, build=_build, machine="vm", rented=True,
                    default_image=False, order=40)
