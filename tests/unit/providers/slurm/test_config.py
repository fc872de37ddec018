"""`[providers.NAME]` of kind slurm: what it takes, and what it refuses with the key named."""

from __future__ import annotations

import tomllib
from datetime import timedelta
from decimal import Decimal
from itertools import takewhile
from pathlib import Path

import pytest
from gpubot.domain.errors import ConfigError
from gpubot.providers.slurm.config import slurm_config

ISSUE_EXAMPLE = """
[providers.lab]
kind = "slurm"
partition = "gpu"
gpu_types = { a100 = "a100", h100 = "h100" }
prices = { a100 = 0.90, h100 = 1.80 }
account = "ml-team"
users = { U0ALICE001 = "alice" }
"""


def lab(**changes) -> dict:
    raw = tomllib.loads(ISSUE_EXAMPLE)["providers"]["lab"]
    raw.update(changes)
    return {k: v for k, v in raw.items() if v is not None}


def test_the_issues_example_reads_with_its_defaults() -> None:
    config = slurm_config(lab(), "lab")
    assert (config.kind, config.partition, config.account, config.qos) == ("slurm", "gpu", "ml-team", None)
    assert config.gpu_types == {"a100": "a100", "h100": "h100"}
    assert config.prices == {"a100": Decimal("0.9"), "h100": Decimal("1.8")}
    assert config.users == {"U0ALICE001": "alice"}
    assert (config.enabled, config.currency, config.regions, config.discounts) == (True, "USD", [], [])
    assert (config.workdir, config.command_timeout, config.slurm_conf) == ("/tmp", timedelta(seconds=20), None)
    assert config.offer_region == "gpu"


def test_gpu_names_are_read_through_the_catalog() -> None:
    config = slurm_config(lab(gpu_types={"A100-40GB": "a100", "H100": "h100_sxm"},
                              prices={"a100": 0, "h100-sxm": "1.5"}), "lab")
    assert config.gpu_types == {"a100": "a100", "h100": "h100_sxm"}
    assert config.prices == {"a100": Decimal(0), "h100": Decimal("1.5")}


def test_the_common_keys_are_taken() -> None:
    config = slurm_config(lab(enabled=False, regions=["lab-a"], currency="CNY", qos="high",
                              discounts=[{"after": "24h", "percent": 10}], command_timeout="5s",
                              slurm_conf="/etc/slurm/slurm.conf", ssh_jump="login.lab"), "lab")
    assert (config.enabled, config.regions, config.currency, config.qos) == (False, ["lab-a"], "CNY", "high")
    assert config.discounts[0].after == timedelta(hours=24) and config.offer_region == "lab-a"
    assert config.command_timeout == timedelta(seconds=5)


@pytest.mark.parametrize(("changes", "key", "expected"), [
    ({"prices": {"a100": 0.9}}, "providers.lab.prices", "no price for h100"),
    ({"prices": {"a100": 0.9, "h100": 1, "l4": 0.2}}, "providers.lab.prices", "l4 is not in gpu_types"),
    ({"prices": {"a100": -1, "h100": 1}}, "providers.lab.prices.a100", "greater than or equal to 0"),
    ({"gpu_types": {"a1000": "a100"}}, "providers.lab.gpu_types", "not a GPU gpubot knows"),
    ({"gpu_types": {}, "prices": {}}, "providers.lab.gpu_types", "at least 1 item"),
    ({"partition": "--uid=0"}, "providers.lab.partition", "a Slurm name"),
    ({"account": "ml team"}, "providers.lab.account", "a Slurm name"),
    ({"users": {"U1": "Alice Smith"}}, "providers.lab.users.U1", "a POSIX user name"),
    ({"workdir": "scratch"}, "providers.lab.workdir", "an absolute path"),
    ({"kind": "pool"}, "providers.lab.kind", "'slurm'"),
    ({"partitions": "gpu"}, "providers.lab.partitions", "no such key"),
    ({"command_timeout": "0s"}, "providers.lab.command_timeout", "longer than zero"),
])
def test_a_bad_value_names_its_key(changes: dict, key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        slurm_config(lab(**changes), "lab")
    assert caught.value.key == key and expected in caught.value.expected


def test_the_partition_is_required() -> None:
    with pytest.raises(ConfigError) as caught:
        slurm_config(lab(partition=None), "lab")
    assert caught.value.key == "providers.lab.partition"


def test_the_commented_example_in_gpubot_example_toml_reads() -> None:
    lines = (Path(__file__).parents[4] / "gpubot.example.toml").read_text(encoding="utf-8").splitlines()
    block = takewhile(lambda line: line.startswith("# "), lines[lines.index("# [providers.lab]"):])
    raw = tomllib.loads("\n".join(line.removeprefix("# ") for line in block))
    config = slurm_config(raw["providers"]["lab"], "lab")
    assert (config.partition, config.users, config.ssh_jump) == ("gpu", {"U0ALICE001": "alice"}, "login.lab")
