"""A gpubot stand-in that launches one booking through the terraform provider, to be killed mid-apply:
`python -m tests.reliability.terraform_launch URL TOKEN STATE_DIR PROVIDER NAME`."""

from __future__ import annotations

import sys
from pathlib import Path

from gpubot.domain.model import OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.terraform.adapter import TerraformProvider

from tests.fakes.terraform_kit import config_for, environ_for


def main(url: str, token: str, state_dir: str, provider: str, name: str) -> None:
    """Launch `name` on the first offer; print the instance (a crash trial kills this process before that)."""
    adapter = TerraformProvider(provider, config_for(url), state_dir=Path(state_dir), environ=environ_for(token))
    offer = adapter.offers(OfferRequest("v100", 1))[0]
    print(adapter.launch(offer, LaunchSpec(int(name.split("-")[1]), name, start_command="python train.py")))


if __name__ == "__main__":
    main(*sys.argv[1:6])
