"""`gpubot serve` over signed HTTP with AutoDL sold out and GCP as the fallback: `/gpu book t4x1 2h` tries GCP's
zone a (exhausted: the insert operation ends with ZONE_RESOURCE_POOL_EXHAUSTED), then zone b, and lands there with
the agent in the VM's startup-script; once the VM is RUNNING with its IP the owner gets the ready DM with the SSH
line; releasing it deletes the VM."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, config, serving, wait_call
from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.gcp_api import FakeGcp

ZONES = ["us-central1-a", "us-central1-b"]
CONFIG = config(            acquire={"poll_every": "1s", "ready_poll_every": "1s", "ready_poll_max": "1s"},
                scheduler={"tick": "1s"},
                providers={"autodl": {"kind": "autodl", "regions": ["westDC2"], "currency": "CNY"},
                           "gcp": {"kind": "gcp", "project": "gpubot-test", "zones": ZONES}},
                fx={"CNY": 0.14})


@pytest.fixture(scope="module")
def clouds() -> Iterator[tuple[FakeAutoDL, FakeGcp]]:
    autodl, gcp = FakeAutoDL("autodl-e2e-token"), FakeGcp("gpubot-test", ZONES, wait_cap=0.3, op_seconds=0.6,
                                                          boot_seconds=0.6)
    autodl.start()
    gcp.start()
    for name in ("RTX 4090", "A100-SXM4-80GB"):
        autodl.set_stock("westDC2", name, 0, 8)  # AutoDL is sold out
    gcp.zone("us-central1-a").free["nvidia-tesla-t4"] = 0  # and so is GCP's first zone
    yield autodl, gcp
    autodl.stop()
    gcp.stop()


@pytest.fixture(scope="module")
def bot(tmp_path_factory, clouds: tuple[FakeAutoDL, FakeGcp]) -> Iterator[RunningBot]:
    autodl, gcp = clouds
    env = {"AUTODL_TOKEN": "autodl-e2e-token", "AUTODL_API_URL": autodl.url, "GCP_API_URL": gcp.url,
           "GCP_ANONYMOUS_CREDENTIALS": "true"}
    with serving(tmp_path_factory.mktemp("gcp"), CONFIG, extra_env=env) as running:
        yield running


def test_book_t4_falls_back_zone_by_zone_dms_the_ssh_line_and_release_deletes_the_vm(bot, clouds) -> None:
    _autodl, gcp = clouds
    assert bot.command("book t4x1 2h", user="UALICE").status_code == 200
    update = wait_call(bot, "chat.update", "gcp us-central1: no capacity")
    ready = wait_call(bot, "chat.postMessage", "#1 is ready")
    assert ready["channel"] == "UALICE" and "ssh gpubot@34.1.7.9" in ready["text"]
    assert "active on gcp us-central1" in wait_call(bot, "chat.update", "#1", "active on gcp")["text"]
    with bot.db.session() as session:
        booking = repo.get_booking(1, session=session)
    assert booking.state == BookingState.ACTIVE and booking.instance_id == f"us-central1-b/{booking.instance_name}"
    assert gcp.live_names() == {booking.instance_name}
    inserts = [json.loads(r.body) for r in gcp.requests if r.method == "POST" and r.path.endswith("/instances")]
    assert [r.path.split("/")[6] for r in gcp.requests if r.method == "POST" and r.path.endswith("/instances")] == \
        ZONES  # zone a first, then zone b
    script = {i["key"]: i["value"] for i in inserts[-1]["metadata"]["items"]}["startup-script"]
    assert script.startswith("#!") and "http://localhost:3000" in script  # the agent, fetched from the bot
    assert inserts[-1]["labels"] == {"gpubot-booking": "1"} and "→" in update["text"]

    bot.command("release 1", user="UALICE")
    wait_call(bot, "chat.update", "#1", "released")
    assert bot.api.wait_for(lambda _calls: gcp.live_names() == set(), 10), "the VM was not deleted"
