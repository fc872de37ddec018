"""Each adapter against its faithful fake, with the real start command running on the fake's machine: the machine
boots for a while before it is reachable, then stays up whatever happens to the agent; a command that returns
(AutoDL) or never runs /start.sh (RunPod) costs the user the machine or its SSH, as on the real services.

Figures (time until SSH and describe calls, polling every 0.1 s) are recorded for the issue note."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import boto3
import httpx
import pytest
from gpubot.domain.model import Instance, Offer, OfferRequest
from gpubot.domain.ports import AgentLaunch, LaunchSpec, Provider
from gpubot.providers.autodl.adapter import AutoDL
from gpubot.providers.autodl.config import AutoDLConfig
from gpubot.providers.aws.adapter import AwsEc2
from gpubot.providers.aws.config import AwsConfig
from gpubot.providers.lambda_cloud.adapter import LambdaCloud
from gpubot.providers.lambda_cloud.config import LambdaConfig
from gpubot.providers.runpod.adapter import RunPod
from gpubot.providers.runpod.config import RunPodConfig

from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.cloud_init import parse_cloud_config, run_user_data
from tests.fakes.gpubot_agent_host import AgentHost
from tests.fakes.lambda_api import FakeLambda
from tests.fakes.machine import Machine
from tests.fakes.runpod_api import FakeRunPod
from tests.reliability.figures import record

KEY = "vendor-key"
POLL = 0.1
BOOT, START = timedelta(seconds=0.6), timedelta(seconds=0.4)
COMMAND = 'echo "start command ran" > "$HOME/started"'


@pytest.fixture(scope="module")
def host() -> Iterator[AgentHost]:
    server = AgentHost()
    server.start()
    yield server
    server.stop()


def wait_until(check: Callable[[], object], seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


class Counting:
    """Counts an adapter's describe calls."""

    def __init__(self, adapter: Provider) -> None:
        self.adapter, self.describes = adapter, 0

    def describe(self, instance: Instance) -> Instance:
        self.describes += 1
        return self.adapter.describe(instance)


def boot(adapter: Provider, offer: Offer, spec: LaunchSpec) -> tuple[Instance, float, int, list[str]]:
    """Launch and follow until ready; (ready instance, seconds, describe calls, statuses seen)."""
    counting, started = Counting(adapter), time.monotonic()
    instance = adapter.launch(offer, spec)
    statuses: list[str] = [instance.status]
    while time.monotonic() - started < 20:
        current = counting.describe(instance)
        if statuses[-1] != current.status:
            statuses.append(current.status)
        if current.ready:
            return current, time.monotonic() - started, counting.describes, statuses
        time.sleep(POLL)
    raise AssertionError(f"never ready; statuses {statuses}")


def spec(agent: AgentLaunch | None, command: str | None = COMMAND) -> LaunchSpec:
    return LaunchSpec(3, "gpubot-3-boot", command, agent=agent)


# -- AutoDL ----------------------------------------------------------------------------------------------------
@pytest.fixture
def autodl_fake() -> Iterator[FakeAutoDL]:
    fake = FakeAutoDL(KEY, create_time=BOOT, start_time=START)
    fake.set_stock("westDC2", "RTX 4090", 8, 8)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def autodl(autodl_fake: FakeAutoDL) -> AutoDL:
    return AutoDL("autodl", AutoDLConfig(currency="CNY", regions=["westDC2"]), KEY, autodl_fake.url,
                  sleep=lambda s: None)


def autodl_offer(autodl: AutoDL) -> Offer:
    return autodl.offers(OfferRequest("rtx4090", 1))[0]


def test_autodl_container_boots_runs_agent_and_command_and_stays_up(autodl: AutoDL, autodl_fake: FakeAutoDL,
                                                                    host: AgentHost) -> None:
    ready, seconds, describes, statuses = boot(autodl, autodl_offer(autodl), spec(host.launch("gpa_autodl")))
    assert statuses == ["creating", "starting", "running"] and ready.ssh.startswith("ssh -p ")
    record("agent delivery", f"AutoDL fake (creating {BOOT.total_seconds():g} s + starting "
                             f"{START.total_seconds():g} s): SSH after {seconds:.2f} s, {describes} describes")
    assert wait_until(lambda: host.pushes_of("gpa_autodl"))
    machine = autodl_fake.machine(ready.instance_id)
    assert wait_until(lambda: machine.read("root/started") == "start command ran\n")
    assert wait_until(lambda: machine.main_command() == "sleep infinity")  # its last step: it stays up from here
    still = autodl.describe(ready)
    assert still.ready and still.status == "running" and machine.alive()


FAILURES = {  # how the agent fails: (change to the agent, change to the machine, what its log then says)
    "wrong hash": (lambda agent: replace(agent, sha256="f" * 64), None, "not running it"),
    "download refused": (lambda agent: replace(agent, download_url="http://127.0.0.1:9/agent/gpubot-agent.py"),
                         None, "could not download"),
    "no nvidia-smi": (None, lambda machine: machine.without("nvidia-smi"), "nvidia-smi is not installed"),
    "no driver": (None, Machine.no_driver, "couldn't communicate with the NVIDIA driver"),
    "no python3": (None, lambda machine: machine.without("python3"), "not running (exit 127)"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_autodl_machine_stays_up_whatever_happens_to_the_agent(autodl: AutoDL, autodl_fake: FakeAutoDL,
                                                               host: AgentHost, failure: str) -> None:
    change_agent, change_machine, logged = FAILURES[failure]
    agent = host.launch("gpa_" + failure.replace(" ", "_"))
    autodl_fake.machine_setup = change_machine or (lambda machine: None)
    ready, *_ = boot(autodl, autodl_offer(autodl), spec(change_agent(agent) if change_agent else agent))
    machine = autodl_fake.machine(ready.instance_id)
    assert wait_until(lambda: logged in machine.read("opt/gpubot/agent.log")), machine.read("opt/gpubot/agent.log")
    assert wait_until(lambda: machine.main_command() == "sleep infinity")  # its last step: it stays up from here
    described = autodl.describe(ready)
    assert described.ready and described.status == "running" and machine.alive()
    assert machine.read("root/started") == "start command ran\n"


def test_autodl_agent_that_crashes_is_restarted_and_the_machine_stays_up(autodl: AutoDL, autodl_fake: FakeAutoDL
                                                                         ) -> None:
    crashing = AgentHost()
    crashing.agent_body = b"raise SystemExit(3)\n"
    crashing.start()
    try:
        ready, *_ = boot(autodl, autodl_offer(autodl), spec(crashing.launch("gpa_crash")))
        machine = autodl_fake.machine(ready.instance_id)
        log = lambda: machine.read("opt/gpubot/agent.log")  # noqa: E731
        assert wait_until(lambda: "not running (exit 3); trying again in 10s" in log())
        assert autodl.describe(ready).ready and machine.alive()
        assert wait_until(lambda: "trying again in 20s" in log(), seconds=25), log()  # restarted once, crashed again
        assert autodl.describe(ready).ready and machine.alive() and crashing.downloads() == 1  # the verified copy
    finally:
        crashing.stop()


@pytest.mark.parametrize("cmd", [
    "pip install -q 'gpubot[agent]' && nohup gpubot agent --url http://x --token y >/tmp/a.log 2>&1 &",
    "nohup sleep 600 >/dev/null 2>&1 &",
])
def test_autodl_container_whose_cmd_returns_shuts_down(autodl: AutoDL, autodl_fake: FakeAutoDL, cmd: str) -> None:
    body = {"name": "gpubot-4-old", "deployment_type": "Container", "container_template": {
        "dc_list": ["westDC2"], "gpu_name_set": ["RTX 4090"], "gpu_num": 1, "cuda_v_from": 118,
        "image_uuid": "base-image-l2t43iu6uk", "cmd": cmd}}
    answer = httpx.post(f"{autodl_fake.url}/api/v1/dev/deployment", json=body, headers={"Authorization": KEY})
    instance = Instance("autodl", answer.json()["data"]["deployment_uuid"], "gpubot-4-old")
    assert wait_until(lambda: autodl.describe(instance).status == "terminated")  # the container is shutdown
    assert not autodl.describe(instance).ready and autodl_fake.idle("westDC2", "RTX 4090") == 8
    assert autodl.list_owned() == []


# -- RunPod ----------------------------------------------------------------------------------------------------
@pytest.fixture
def runpod_fake() -> Iterator[FakeRunPod]:
    fake = FakeRunPod(KEY, provision_time=BOOT, start_time=START)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def runpod(runpod_fake: FakeRunPod) -> RunPod:
    return RunPod("runpod", RunPodConfig(), KEY, f"{runpod_fake.url}/v2", sleep=lambda s: None)


RUNPOD_OFFER = Offer("runpod", "any", "rtx4090", 1, Decimal("0.74"), "USD", ref="NVIDIA GeForce RTX 4090")


def test_runpod_with_our_wrapper_runs_start_sh_and_gets_ssh(runpod: RunPod, runpod_fake: FakeRunPod,
                                                            host: AgentHost) -> None:
    ready, seconds, describes, statuses = boot(runpod, RUNPOD_OFFER, spec(host.launch("gpa_runpod")))
    assert statuses == ["provisioning", "starting", "running"] and ready.ssh.startswith("ssh root@")
    record("agent delivery", f"RunPod fake (provisioning {BOOT.total_seconds():g} s + starting "
                             f"{START.total_seconds():g} s): SSH after {seconds:.2f} s, {describes} describes")
    machine = runpod_fake.machines[ready.instance_id]
    assert (machine.root / "sshd.started").exists()
    assert wait_until(lambda: host.pushes_of("gpa_runpod"))
    assert wait_until(lambda: machine.read("root/started") == "start command ran\n")


@pytest.mark.parametrize(("args", "ssh"), [("python serve.py", False), ("sleep infinity", False), ("", True)])
def test_runpod_pod_without_start_sh_never_gets_ssh(runpod: RunPod, runpod_fake: FakeRunPod, args: str,
                                                    ssh: bool) -> None:
    body = {"name": "gpubot-5-raw", "image": "runpod/pytorch", "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1},
            "ports": ["22/tcp"], "startSsh": True, **({"args": args} if args else {})}
    answer = httpx.post(f"{runpod_fake.url}/v2/pods", json=body, headers={"Authorization": f"Bearer {KEY}"})
    instance = Instance("runpod", answer.json()["id"], "gpubot-5-raw")
    assert wait_until(lambda: runpod.describe(instance).status in ("running", "terminated"))  # EXITED: terminated
    if ssh:
        assert wait_until(lambda: runpod.describe(instance).ready)
    else:  # the pod's command runs (or ran) without /start.sh, the only thing that starts sshd
        machine = runpod_fake.machines[instance.instance_id]
        assert wait_until(lambda: machine.main_command() in ("", args))
    described = runpod.describe(instance)
    assert (described.ssh is not None) is ssh and (described.status == "running" or args == "python serve.py")


# -- Lambda ----------------------------------------------------------------------------------------------------
def test_lambda_instance_boots_then_its_user_data_installs_the_agent(host: AgentHost) -> None:
    fake = FakeLambda(KEY, launch_window=0.0, boot_time=BOOT + START)
    fake.start()
    try:
        cloud = LambdaCloud("lambda", LambdaConfig(), KEY, f"{fake.url}/api/v1")
        offer = next(o for o in cloud.offers(OfferRequest("h100", 8)) if o.available)
        ready, seconds, describes, statuses = boot(cloud, offer, spec(host.launch("gpa_lambda")))
        assert statuses == ["booting", "active"] and ready.ssh.startswith("ssh ubuntu@")
        record("agent delivery", f"Lambda fake (booting {(BOOT + START).total_seconds():g} s): SSH after "
                                 f"{seconds:.2f} s, {describes} describes")
        machine = fake.run_user_data(ready.instance_id)
        assert wait_until(lambda: host.pushes_of("gpa_lambda")), machine.read("gpubot-agent.service.log")
        assert machine.read("systemctl.log") == "daemon-reload\nenable --now gpubot-agent.service\n"
        assert wait_until(lambda: machine.read("root/started") == "start command ran\n")
    finally:
        fake.stop()


# -- AWS (moto) ------------------------------------------------------------------------------------------------
def test_aws_user_data_is_a_cloud_config_that_installs_the_agent(host: AgentHost,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    from moto import mock_aws  # here, not at collection (tests/conftest.py, VENDOR_GROUPS)

    with mock_aws():
        ec2 = AwsEc2("aws", AwsConfig(regions=["us-east-1"], image="ami-12c6146b"))
        offer = ec2.offers(OfferRequest("a10g", 4))[0]
        ready, seconds, describes, _statuses = boot(ec2, offer, spec(host.launch("gpa_aws")))
        record("agent delivery", f"AWS (moto, running at once): SSH after {seconds:.2f} s, {describes} describes")
        raw = boto3.client("ec2", region_name="us-east-1").describe_instance_attribute(
            InstanceId=ready.instance_id, Attribute="userData")
        user_data = base64.b64decode(raw["UserData"]["Value"]).decode()
    assert set(parse_cloud_config(user_data)) == {"write_files", "runcmd"}
    machine = Machine()
    try:
        assert run_user_data(machine, user_data).wait(10) == 0
        assert wait_until(lambda: host.pushes_of("gpa_aws")), machine.read("gpubot-agent.service.log")
        assert "Restart=on-failure" in machine.read("etc/systemd/system/gpubot-agent.service")
        assert wait_until(lambda: machine.read("root/started") == "start command ran\n")
    finally:
        machine.remove()
