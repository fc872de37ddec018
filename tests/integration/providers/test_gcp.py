"""GCP Compute Engine adapter against the fake Compute Engine REST API (tests/fakes/gcp_api.py), through Google's
own client library (REST transport, anonymous credentials, `api_endpoint` pointed at the fake)."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from gpubot.domain.errors import (
    AuthFailed,
    ImageRefused,
    InvalidRequest,
    NoCapacity,
    QuotaExceeded,
    RateLimited,
    Transient,
)
from gpubot.domain.model import Instance, OfferRequest
from gpubot.domain.ports import AgentLaunch, LaunchSpec, Provider
from gpubot.providers.gcp.config import GcpConfig

from tests.fakes.gcp_api import FakeGcp
from tests.fakes.gcp_world import FakeError
from tests.fakes.gpubot_agent_host import AgentHost

pytestmark = pytest.mark.slow  # a long module: its xdist group is handed out first (tests/conftest.py)

if TYPE_CHECKING:
    from gpubot.providers.gcp.adapter import GcpCompute

# Google's client library costs about 3 s of CPU to import: it is imported where a test needs it, so that only the
# pytest worker running these tests (one xdist group, tests/conftest.py) pays for it, not every worker's collection.

ZONES = ["us-central1-a", "us-central1-b", "us-east1-b"]
PROJECT = "gpubot-test"


@pytest.fixture
def fake() -> Iterator[FakeGcp]:
    server = FakeGcp(PROJECT, ZONES, page_size=4, wait_cap=0.1, op_seconds=0.3, boot_seconds=0.2,
                     delete_seconds=0.2)
    server.start()
    yield server
    server.stop()


def make(fake: FakeGcp, adapter: dict | None = None, **policy: Any) -> GcpCompute:
    """The adapter on the fake, through Google's client with anonymous credentials; `adapter`: its own options."""
    from google.auth.credentials import AnonymousCredentials
    from gpubot.providers.gcp.adapter import GcpCompute

    config = GcpConfig(**{"zones": ZONES, **policy})
    return GcpCompute("gcp", config, project=PROJECT, credentials=AnonymousCredentials(), api_endpoint=fake.url,
                      **{"poll_interval": 0.05, **(adapter or {})})


AGENT = AgentLaunch("https://bot.example.com", "https://bot.example.com/agent/gpubot-agent.py", "5e" * 32,
                    "gpa_agent_token")


def launch(gcp: GcpCompute, gpu: str = "t4", count: int = 1, *, zone: str = "us-central1-a", spot: bool = False,
           name: str = "gpubot-7-a1", start: str | None = "run-job") -> Instance:
    offer = next(o for o in gcp.offers(OfferRequest(gpu, count, spot=spot)) if o.ref.startswith(zone + "/"))
    return gcp.launch(offer, LaunchSpec(7, name, start_command=start, agent=AGENT))


def until_ready(gcp: GcpCompute, instance: Instance, timeout: float = 5.0) -> Instance:
    deadline = time.monotonic() + timeout
    while not (current := gcp.describe(instance)).ready and time.monotonic() < deadline:
        time.sleep(0.05)
    return current


def inserted_body(fake: FakeGcp) -> dict:
    return json.loads(next(r for r in fake.requests if r.method == "POST" and r.path.endswith("/instances")).body)


def calls(fake: FakeGcp) -> Counter:
    """Requests by kind: catalog, insert, wait, get, list, delete, operations."""
    kinds = Counter()
    for r in fake.requests:
        tail = r.path.rsplit("/", 2)
        if r.path.endswith("/wait"):
            kinds["wait"] += 1
        elif r.method in ("POST", "DELETE"):
            kinds["insert" if r.method == "POST" else "delete"] += 1
        elif tail[-1] in ("machineTypes", "acceleratorTypes"):
            kinds["catalog"] += 1
        else:
            kinds["get" if tail[-2] == "instances" else "list" if tail[-1] == "instances" else tail[-1]] += 1
    return kinds


# -- offers -----------------------------------------------------------------------------------------------------
def test_is_a_provider_with_one_offer_per_zone_that_sells_the_shape(fake: FakeGcp) -> None:
    fake.zone("us-east1-b").machine_types.discard("g2-standard-4")
    gcp = make(fake)
    assert isinstance(gcp, Provider) and gcp.kind == "gcp"
    offers = gcp.offers(OfferRequest("l4", 1))
    assert [(o.region, o.ref) for o in offers] == [("us-central1", "us-central1-a/g2-standard-4"),
                                                   ("us-central1", "us-central1-b/g2-standard-4")]
    assert all(o.available and o.currency == "USD" and str(o.price_per_gpu_hour) == "0.56004" for o in offers)


def test_attached_gpus_need_the_accelerator_type_in_the_zone(fake: FakeGcp) -> None:
    fake.zone("us-central1-b").accelerators.discard("nvidia-tesla-t4")
    offers = make(fake).offers(OfferRequest("t4", 4))
    assert [o.ref for o in offers] == ["us-central1-a/n1-standard-16", "us-east1-b/n1-standard-16"]
    assert make(fake).offers(OfferRequest("t4", 8)) == []  # at most 4 T4 per VM


def test_shapes_map_to_the_right_machine_types(fake: FakeGcp) -> None:
    gcp = make(fake, zones=["us-central1-a"])
    refs = {(gpu, n): [o.ref for o in gcp.offers(OfferRequest(gpu, n))]
            for gpu, n in (("a100", 8), ("a100-80g", 1), ("h100", 8), ("h100", 1), ("a100", 16))}
    assert refs == {("a100", 8): ["us-central1-a/a2-highgpu-8g"], ("a100-80g", 1): ["us-central1-a/a2-ultragpu-1g"],
                    ("h100", 8): ["us-central1-a/a3-highgpu-8g"], ("h100", 1): [],
                    ("a100", 16): ["us-central1-a/a2-megagpu-16g"]}
    assert [o.ref for o in gcp.offers(OfferRequest("h100", 1, spot=True))] == ["us-central1-a/a3-highgpu-1g"]


def test_region_filter_policy_prices_and_unknown_gpus(fake: FakeGcp) -> None:
    gcp = make(fake, prices={"t4": 0.55})
    offers = gcp.offers(OfferRequest("t4", 1, region="us-east1"))
    assert [(o.ref, str(o.price_per_gpu_hour)) for o in offers] == [("us-east1-b/n1-standard-4", "0.55")]
    assert gcp.offers(OfferRequest("rtx4090", 1)) == []


def test_the_zone_catalogs_are_read_through_every_page_once(fake: FakeGcp) -> None:
    gcp = make(fake)
    gcp.offers(OfferRequest("a100", 8))
    first = calls(fake)["catalog"]
    # 26 machine types at 4 a page = 7 pages, 6 accelerator types = 2 pages, per zone
    assert first == 3 * (7 + 2)
    assert any("pageToken" in r.query for r in fake.requests)
    gcp.offers(OfferRequest("l4", 1))
    assert calls(fake)["catalog"] == first


def test_a_zone_the_project_does_not_have_is_skipped(fake: FakeGcp) -> None:
    gcp = make(fake, zones=["us-central1-a", "mars-north1-a"])
    assert [o.ref for o in gcp.offers(OfferRequest("t4", 1))] == ["us-central1-a/n1-standard-4"]


# -- launch -----------------------------------------------------------------------------------------------------
def test_insert_is_followed_until_its_operation_is_done_then_the_vm_boots(fake: FakeGcp) -> None:
    fake.world.op_seconds = 0.8
    gcp = make(fake)
    gcp.offers(OfferRequest("t4", 1))
    started = time.monotonic()
    instance = launch(gcp)
    assert time.monotonic() - started >= 0.8  # the launch returned only once the operation was DONE
    assert all(op["status"] == "DONE" for op in fake.world.operations.values())
    assert (instance.instance_id, instance.region, instance.ready) == ("us-central1-a/gpubot-7-a1", "us-central1",
                                                                       False)
    assert calls(fake)["wait"] >= 1
    ready = until_ready(gcp, instance)
    assert ready.ready and ready.status == "running" and ready.ssh == "ssh gpubot@34.1.7.9"
    assert (ready.gpu, ready.count, ready.extra["labels"]) == ("t4", 1, {"gpubot-booking": "7"})


def test_what_the_insert_asks_for(fake: FakeGcp) -> None:
    gcp = make(fake)
    launch(gcp, start="python3 train.py")
    body = inserted_body(fake)
    assert body["name"] == "gpubot-7-a1" and body["labels"] == {"gpubot-booking": "7"}
    assert body["machineType"] == "zones/us-central1-a/machineTypes/n1-standard-4"
    assert body["guestAccelerators"] == [{"acceleratorType": "zones/us-central1-a/acceleratorTypes/nvidia-tesla-t4",
                                          "acceleratorCount": 1}]
    assert body["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert body["scheduling"]["provisioningModel"] == "STANDARD"
    items = {i["key"]: i["value"] for i in body["metadata"]["items"]}
    script = items["startup-script"]
    assert script.startswith("#!/bin/bash\n") and items["install-nvidia-driver"] == "True"
    assert "gpubot-agent.service" in script and AGENT.download_url in script and AGENT.sha256 in script
    assert "python3 train.py" in script
    assert "deeplearning-platform-release" in body["disks"][0]["initializeParams"]["sourceImage"]
    insert = next(r for r in fake.requests if r.method == "POST" and r.path.endswith("/instances"))
    assert uuid.UUID(insert.query["requestId"][0])


@pytest.mark.parametrize("image", [
    "projects/evil-corp/global/images/family/miner",
    "https://www.googleapis.com/compute/v1/projects/evil-corp/global/images/miner-1"])
def test_an_image_of_a_project_not_allowed_is_refused_before_anything_is_inserted(fake: FakeGcp, image: str) -> None:
    gcp = make(fake)
    offer = next(iter(gcp.offers(OfferRequest("t4", 1))))
    with pytest.raises(ImageRefused) as refused:
        gcp.launch(offer, LaunchSpec(7, "gpubot-7-a2", image=image))
    assert (refused.value.allowed, refused.value.what) == (
        ("deeplearning-platform-release", "ml-images", PROJECT), "projects")
    assert calls(fake)["insert"] == 0


@pytest.mark.parametrize("image", [
    "projects/ml-images/global/images/family/tf-2-16-cu121",
    f"projects/{PROJECT}/global/images/team-cuda", "global/images/team-cuda",  # the project's own
    "projects/evil-corp/global/images/miner-1"])  # not allowed, but the team configured it (`image`)
def test_allowed_project_own_project_and_configured_images_boot(fake: FakeGcp, image: str) -> None:
    gcp = make(fake, image="projects/evil-corp/global/images/miner-1")
    offer = next(iter(gcp.offers(OfferRequest("t4", 1))))
    gcp.launch(offer, LaunchSpec(7, "gpubot-7-a3", image=image))
    assert inserted_body(fake)["disks"][0]["initializeParams"]["sourceImage"] == image


def test_the_vm_boots_the_agent_from_its_startup_script_and_it_reaches_the_bot(fake: FakeGcp) -> None:
    host = AgentHost()
    host.start()
    try:
        gcp = make(fake)
        offer = gcp.offers(OfferRequest("t4", 1))[0]
        token = "gpa_gcp_boot_token"
        instance = until_ready(gcp, gcp.launch(offer, LaunchSpec(7, "gpubot-7-boot", agent=host.launch(token))))
        machine = fake.run_startup_script(instance.name)
        assert machine.process is not None and machine.process.wait(10) == 0  # the script returns; the VM stays up
        deadline = time.monotonic() + 15
        while not host.pushes_of(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert host.pushes_of(token), machine.read("gpubot-agent.service.log")
        assert "enable --now gpubot-agent.service" in machine.read("systemctl.log")
    finally:
        host.stop()


def test_spot_is_a_spot_vm_deleted_on_preemption_and_bundled_gpus_are_not_attached(fake: FakeGcp) -> None:
    launch(make(fake), "l4", 1, spot=True)
    body = inserted_body(fake)
    assert body["scheduling"] == {"onHostMaintenance": "TERMINATE", "provisioningModel": "SPOT",
                                  "instanceTerminationAction": "DELETE", "automaticRestart": False}
    assert "guestAccelerators" not in body


def test_a_repeated_insert_with_the_same_request_id_creates_nothing_new(fake: FakeGcp) -> None:
    body = {"name": "gpubot-1-x", "machineType": "zones/us-central1-a/machineTypes/e2-standard-4"}
    first = fake.world.insert("us-central1-a", body, "5b1c6d1e-8a11-4c57-9d1b-3b1b3c8e0a01")
    again = fake.world.insert("us-central1-a", body, "5b1c6d1e-8a11-4c57-9d1b-3b1b3c8e0a01")
    assert first is again and len(fake.world.live()) == 1


# -- error families ---------------------------------------------------------------------------------------------
def test_an_exhausted_zone_is_no_capacity_for_that_zone_and_leaves_no_vm(fake: FakeGcp) -> None:
    fake.zone("us-central1-a").free["nvidia-tesla-t4"] = 0
    gcp = make(fake)
    with pytest.raises(NoCapacity) as caught:
        launch(gcp)
    assert caught.value.scope == "offer" and caught.value.region == "us-central1"
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in str(caught.value)
    assert fake.live_names() == set()
    assert launch(gcp, zone="us-central1-b", name="gpubot-7-b2").instance_id == "us-central1-b/gpubot-7-b2"


@pytest.mark.parametrize("code", ["ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "UNSUPPORTED_OPERATION",
                                  "RESOURCE_NOT_READY", "RESOURCE_OPERATION_RATE_EXCEEDED"])
def test_other_zone_codes_block_the_zone(fake: FakeGcp, code: str) -> None:
    fake.zone("us-central1-a").op_errors.append((code, "The zone does not have enough resources (resource type:"
                                                       "compute)."))
    with pytest.raises(NoCapacity) as caught:
        launch(make(fake))
    assert caught.value.scope == "offer"


def test_a_regional_gpu_quota_blocks_the_region(fake: FakeGcp) -> None:
    fake.world.quotas["us-central1", "NVIDIA_T4_GPUS"] = 0
    with pytest.raises(QuotaExceeded) as caught:
        launch(make(fake))
    assert (caught.value.scope, caught.value.region) == ("region", "us-central1")
    assert "NVIDIA_T4_GPUS" in str(caught.value)


def test_the_global_gpu_quota_blocks_all_of_gcp(fake: FakeGcp) -> None:
    fake.world.quotas["global", "GPUS_ALL_REGIONS"] = 0
    with pytest.raises(QuotaExceeded) as caught:
        launch(make(fake))
    assert caught.value.scope == "provider" and "GPUS_ALL_REGIONS" in str(caught.value)


def test_spot_counts_against_the_preemptible_quota(fake: FakeGcp) -> None:
    fake.world.quotas["us-central1", "PREEMPTIBLE_NVIDIA_T4_GPUS"] = 0
    with pytest.raises(QuotaExceeded):
        launch(make(fake), spot=True)
    assert launch(make(fake), name="gpubot-7-od").status == "staging"


@pytest.mark.parametrize(("status", "reason", "error", "scope"), [
    (403, "rateLimitExceeded", RateLimited, None),
    (403, "quotaExceeded", QuotaExceeded, "region"),
    (503, "insufficientCapacity", NoCapacity, "offer"),
    (400, "invalid", InvalidRequest, None),
    (403, "forbidden", AuthFailed, None),
])
def test_synchronous_http_errors(fake: FakeGcp, status: int, reason: str, error: type, scope: str | None) -> None:
    fake.zone("us-central1-a").sync_errors.append(FakeError(status, reason, f"injected {reason}"))
    with pytest.raises(error) as caught:
        launch(make(fake))
    assert getattr(caught.value, "scope", None) == scope
    assert calls(fake)["insert"] == 1  # the client did not retry the insert


def test_an_operation_still_running_at_the_bound_is_transient(fake: FakeGcp) -> None:
    fake.world.op_seconds = 5.0
    gcp = make(fake, adapter={"operation_timeout": 0.3})
    with pytest.raises(Transient):
        launch(gcp)
    assert [i.name for i in gcp.list_owned()] == ["gpubot-7-a1"]  # reconciliation can find it by its label


def test_a_project_that_wants_credentials_refuses_anonymous_calls(fake: FakeGcp) -> None:
    fake.token = "ya29.secret"
    with pytest.raises(AuthFailed):
        make(fake).offers(OfferRequest("t4", 1))


# -- instances --------------------------------------------------------------------------------------------------
def test_a_preempted_spot_vm_reads_as_preempted(fake: FakeGcp) -> None:
    gcp = make(fake)
    instance = until_ready(gcp, launch(gcp, spot=True))
    fake.world.delete_seconds = 30.0  # Google gives a preempted VM up to 30 s to shut down
    before = datetime.now(UTC)
    fake.preempt(instance.name)
    seen = gcp.describe(instance)
    assert seen.status == "preempted"  # stopping, with the preemption operation on record
    assert seen.stopped_at is not None and abs((seen.stopped_at - before).total_seconds()) < 5
    assert [(i.name, i.status) for i in gcp.list_owned()] == [(instance.name, "preempted")]
    with fake.world.lock:
        fake.world.instances["us-central1-a", instance.name]["gone_at"] = 0.0  # then it is deleted
    assert fake.live_names() == set() and gcp.list_owned() == []
    assert gcp.describe(instance).status == "preempted"


def test_delete_is_safe_twice_and_a_deleted_vm_reads_as_terminated(fake: FakeGcp) -> None:
    gcp = make(fake)
    instance = until_ready(gcp, launch(gcp))
    fake.world.delete_seconds = 30.0
    gcp.terminate(instance)
    gcp.terminate(instance)
    assert gcp.describe(instance).status == "stopping"
    with fake.world.lock:
        fake.world.instances["us-central1-a", instance.name]["gone_at"] = 0.0  # the deletion completes
    gcp.terminate(instance)
    assert gcp.describe(instance).status == "terminated" and fake.live_names() == set()


def test_a_vm_whose_insert_still_runs_cannot_be_deleted_yet(fake: FakeGcp) -> None:
    fake.world.op_seconds = 30.0
    operation = fake.world.insert("us-central1-a", {"name": "gpubot-9-x", "machineType": "e2-standard-4"}, None)
    gcp, vm = make(fake), Instance("gcp", "us-central1-a/gpubot-9-x", "gpubot-9-x")
    with pytest.raises(Transient):
        gcp.terminate(vm)
    with fake.world.lock:
        operation["done_at"] = fake.world.instances["us-central1-a", "gpubot-9-x"]["provisioned_at"] = 0.0
    gcp.terminate(vm)
    assert gcp.describe(vm).status == "stopping"


def test_list_owned_finds_labelled_gpubot_vms_in_every_zone_across_pages(fake: FakeGcp) -> None:
    fake.page_size = 2
    for zone, name, labels in (("us-central1-a", "gpubot-1-a", {"gpubot-booking": "1"}),
                               ("us-central1-a", "gpubot-2-b", {"gpubot-booking": "2"}),
                               ("us-east1-b", "gpubot-3-c", {"gpubot-booking": "3"}),
                               ("us-east1-b", "someone-elses", {"gpubot-booking": "4"}),
                               ("us-central1-b", "gpubot-5-e", {})):
        fake.world.insert(zone, {"name": name, "machineType": "e2-standard-4", "labels": labels}, None)
    owned = make(fake, zones=["us-central1-a"]).list_owned()  # a zone dropped from the configuration still counts
    assert sorted((i.name, i.instance_id, i.region) for i in owned) == [
        ("gpubot-1-a", "us-central1-a/gpubot-1-a", "us-central1"),
        ("gpubot-2-b", "us-central1-a/gpubot-2-b", "us-central1"), ("gpubot-3-c", "us-east1-b/gpubot-3-c", "us-east1")]
    lists = [r for r in fake.requests if r.path.endswith("/aggregated/instances")]
    assert len(lists) == 2 and all(r.query["filter"] == ["labels.gpubot-booking:*"] for r in lists)


def test_telemetry_is_empty(fake: FakeGcp) -> None:
    assert make(fake).telemetry(Instance("gcp", "us-central1-a/gpubot-1-a", "gpubot-1-a")) == []
