"""The `terraform` provider kind: a team-owned Terraform module, one state per booking."""

from __future__ import annotations

from pathlib import Path

from gpubot.providers.registry import BuildContext, KindSettings, ProviderKind
from gpubot.providers.terraform.config import TerraformConfig, default_state_dir

__all__ = ["KIND"]


class TerraformSettings(KindSettings):
    """Where the ledger is: the working directories live beside it unless `state_dir` says otherwise."""

    database_url: str = "sqlite:///gpubot.db"


def _build(name: str, config: TerraformConfig, context: BuildContext):
    """The adapter over the team's module; LookupError when no Terraform can run here."""
    from gpubot.domain.errors import ConfigError
    from gpubot.providers.terraform.adapter import TerraformProvider

    state_dir = Path(config.state_dir) if config.state_dir else \
        default_state_dir(context.read_settings(TerraformSettings).database_url)
    try:
        return TerraformProvider(name, config, state_dir=state_dir)
    except ConfigError as exc:
        raise LookupError(str(exc)) from None


def _check(provider) -> str:
    """check-config: the Terraform found and its version; the module initialised and validated."""
    from gpubot.providers.terraform.check import check_module

    found = check_module(provider.name, provider.config, provider.state_dir, provider.environ)
    if not found.usable:
        raise LookupError(found.summary())
    return found.summary()


KIND = ProviderKind(name="terraform", config=TerraformConfig, build=_build, machine="vm", rented=True,
                    default_image=False, order=70, settings=TerraformSettings,
                    check=_check)
