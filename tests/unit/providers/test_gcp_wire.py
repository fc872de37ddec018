"""The Compute Engine request bodies gpubot sends (providers/gcp/wire.py): request ids, startup scripts, inserts.

They are Google's own types, so the module under test imports Google's client (~3 s of CPU): the `wire` fixture
imports it when a test needs it, not at collection, and these tests run in one pytest-xdist group
(tests/conftest.py, VENDOR_GROUPS), so one worker pays for it, not every worker."""

from __future__ import annotations

from decimal import Decimal
from types import ModuleType

import pytest
from gpubot.domain.model import Offer
from gpubot.domain.ports import AgentLaunch, LaunchSpec
from gpubot.providers.gcp.catalog import shape_for


@pytest.fixture(scope="module")
def wire() -> ModuleType:
    """providers/gcp/wire.py."""
    from gpubot.providers.gcp import wire

    return wire


def test_request_id_is_a_stable_uuid_per_name_and_offer(wire: ModuleType) -> None:
    offer = Offer("gcp", "us-central1", "t4", 1, Decimal("0.35"), "USD", ref="us-central1-a/n1-standard-4")
    other_zone = Offer("gcp", "us-central1", "t4", 1, Decimal("0.35"), "USD", ref="us-central1-b/n1-standard-4")
    assert wire.request_id("gpubot-1-a", offer) == wire.request_id("gpubot-1-a", offer)
    assert len({wire.request_id("gpubot-1-a", offer), wire.request_id("gpubot-1-a", other_zone),
                wire.request_id("gpubot-1-b", offer)}) == 3


def test_the_startup_script_installs_the_agent_and_runs_the_start_command(wire: ModuleType) -> None:
    agent = AgentLaunch("https://bot.example.com", "https://bot.example.com/agent/gpubot-agent.py", "ab" * 32,
                        "gpa_token")
    script = wire.startup_script(LaunchSpec(1, "n", agent=agent), "python3 serve.py")
    assert script is not None and script.startswith("#!/bin/bash\n")
    assert "gpubot-agent.service" in script and "ab" * 32 in script and "python3 serve.py" in script
    assert "echo mine" in (wire.startup_script(LaunchSpec(1, "n", "echo mine"), "python3 serve.py") or "")
    assert wire.startup_script(LaunchSpec(1, "n"), None) is None


def test_the_insert_body_installs_the_launch_key_for_the_ssh_user(wire: ModuleType) -> None:
    spec = LaunchSpec(3, "gpubot-3-k", ssh_public_key="ssh-ed25519 AAAA me")
    body = wire.instance_resource(spec, "us-central1-a", shape_for("a100", 1), spot=False, image="my-image",
                                  script=None)
    items = {i.key: i.value for i in body.metadata.items}
    assert items == {"ssh-keys": "gpubot:ssh-ed25519 AAAA me"}  # no driver flag for a team's own image
    assert body.labels == {"gpubot-booking": "3"} and not body.guest_accelerators
    default = wire.instance_resource(spec, "us-central1-a", shape_for("t4", 1), spot=False, image=wire.DEFAULT_IMAGE,
                                     script="#!/bin/bash\nx\n")
    assert {i.key for i in default.metadata.items} == {"ssh-keys", "install-nvidia-driver", "startup-script"}
