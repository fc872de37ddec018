"""[providers.X] of kind terraform: what the schema accepts and refuses."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from gpubot.providers.terraform.config import DEFAULT_CAPACITY_ERRORS, TerraformConfig, default_state_dir
from pydantic import ValidationError

ISSUE_EXAMPLE = {
    "kind": "terraform", "module": "infra/gpu-standby", "regions": ["us-east-1"],
    "shapes": [{"gpu": "v100", "count": 1, "price": 3.06}, {"gpu": "t4", "count": 1, "price": 0.53}],
    "vars": {"subnet_id": "subnet-0abc"},
    "capacity_errors": ["InsufficientInstanceCapacity", "ZONE_RESOURCE_POOL_EXHAUSTED"],
}


def test_the_issue_example_is_valid_with_its_defaults():
    config = TerraformConfig.model_validate(ISSUE_EXAMPLE)
    assert config.shapes[1].gpu == "t4" and config.shapes[0].price == Decimal("3.06")
    assert (config.terraform, config.parallel, config.timeout, config.state_dir) == \
        ("terraform", 2, timedelta(minutes=4), None)
    assert config.capacity_markers() == DEFAULT_CAPACITY_ERRORS  # repeated defaults counted once
    assert config.module_path() == (Path.cwd() / "infra/gpu-standby").resolve()


def test_capacity_errors_add_to_the_defaults_and_durations_read_as_people_write_them():
    config = TerraformConfig.model_validate({**ISSUE_EXAMPLE, "capacity_errors": ["Out of host capacity"],
                                             "timeout": "2m30s"})
    assert config.capacity_markers() == (*DEFAULT_CAPACITY_ERRORS, "Out of host capacity")
    assert config.timeout == timedelta(minutes=2, seconds=30)


@pytest.mark.parametrize(("change", "complaint"), [
    ({"zones": ["us-east-1a"]}, "Extra inputs are not permitted"),
    ({"regions": []}, "at least 1 item"),
    ({"shapes": []}, "at least 1 item"),
    ({"shapes": [{"gpu": "v1000", "price": 1}]}, "a GPU of the catalog"),
    ({"shapes": [{"gpu": "t4", "count": 0, "price": 1}]}, "greater than 0"),
    ({"shapes": [{"gpu": "t4", "price": -1}]}, "greater than or equal to 0"),
    ({"vars": {"region": "eu-west-1", "spot": True}}, "region, spot: gpubot sets these"),
    ({"parallel": 0}, "greater than or equal to 1"),
    ({"kind": "aws"}, "'terraform'"),
    ({"start_command": "#cloud-config\nruncmd: []"}, "a shell command"),
])
def test_a_bad_block_is_refused_with_what_was_expected(change, complaint):
    with pytest.raises(ValidationError) as refused:
        TerraformConfig.model_validate({**ISSUE_EXAMPLE, **change})
    assert complaint in str(refused.value)


def test_gpu_aliases_are_read_as_the_catalog_names_them():
    config = TerraformConfig.model_validate({**ISSUE_EXAMPLE, "shapes": [{"gpu": "A100_80G", "count": 8,
                                                                          "price": 40}]})
    assert config.shapes[0].gpu == "a100-80g"


def test_the_default_state_dir_sits_beside_the_ledger(tmp_path):
    assert default_state_dir(f"sqlite:///{tmp_path}/ledger.db") == tmp_path / "ledger-terraform"
    assert default_state_dir("postgresql+psycopg://gpubot@db/gpubot") == Path("gpubot-terraform").resolve()
    assert default_state_dir("sqlite:///:memory:") == Path("gpubot-terraform").resolve()
