"""A new provider kind is a folder: this test writes one (a "racks" cloud) into a temporary directory that joins
providers/, and checks that the policy loader, check-config's provider status, the secrets' redaction, the wiring,
the launch options and a booking typed in Slack all take it up with nothing shared changed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from textwrap import dedent

import gpubot.providers
import pytest
from gpubot.db import bookings as booking_repo
from gpubot.domain.errors import ConfigError
from gpubot.domain.model import BookingState
from gpubot.providers.registry import all_kinds, forget_kinds, kind_named, policy_from_dict
from pydantic import SecretStr

from gpubot.console import Console
from gpubot.runtime import Runtime
from gpubot.sandbox.slack_api import FakeSlackApi
from gpubot.settings import Settings
from gpubot.wiring import provider_status, wire

SECRET = "racks-test-signing-secret"
TOKEN = "racks-token-4242"

# The whole kind: its declaration, its table's model and settings, and its adapter (an in-memory cloud whose
# machines are the racks its table lists).
KIND_FILES = {
    "__init__.py": '''
        """Racks: a cloud written by tests/integration/providers/test_registry.py, and nothing else."""

        from gpubot.providers.racks.config import RacksConfig, RacksSettings
        from gpubot.providers.registry import ProviderKind, required_secret


        def _build(name, config, context):
            token = required_secret(context.read_settings(RacksSettings), "racks_token")
            from gpubot.providers.racks.adapter import RackCloud

            return RackCloud(name, config, token)


        KIND = ProviderKind(name="racks", config=RacksConfig, settings=RacksSettings, build=_build,
                            machine="container", rented=True, default_image=True, order=5)
        ''',
    "config.py": '''
        from decimal import Decimal
        from typing import Annotated, Literal

        from gpubot.domain.policy_sections import ImageProviderPolicy
        from gpubot.providers.registry import KindSettings
        from pydantic import BaseModel, ConfigDict, Field, SecretStr


        class Rack(BaseModel):
            model_config = ConfigDict(extra="forbid", frozen=True)

            gpu: str
            gpus: Annotated[int, Field(gt=0)]
            price: Decimal
            region: str = "hall-1"


        class RacksConfig(ImageProviderPolicy):
            kind: Literal["racks"] = "racks"
            racks: list[Rack] = Field(default_factory=list)


        class RacksSettings(KindSettings):
            racks_token: SecretStr | None = None
        ''',
    "adapter.py": '''
        import threading
        from dataclasses import replace

        from gpubot.domain.errors import NoCapacity
        from gpubot.domain.model import Instance, Offer


        class RackCloud:
            kind = "racks"

            def __init__(self, name, config, token):
                self.name, self.config, self.token = name, config, token
                self.free = {rack.gpu: rack.gpus for rack in config.racks}
                self.running, self.specs, self._lock = {}, [], threading.Lock()

            def offers(self, request):
                return [Offer(self.name, r.region, r.gpu, request.count, r.price, self.config.currency,
                              available=self.free[r.gpu] >= request.count)
                        for r in self.config.racks if r.gpu == request.gpu and r.gpus >= request.count]

            def launch(self, offer, spec):
                with self._lock:
                    if self.free[offer.gpu] < offer.count:
                        raise NoCapacity(self.name, "the rack is full", "offer")
                    self.free[offer.gpu] -= offer.count
                    self.specs.append(spec)
                    machine = Instance(self.name, f"rack-{spec.name}", spec.name, offer.region, "running", True,
                                       f"ssh {spec.name}.racks", offer.gpu, offer.count)
                    self.running[machine.instance_id] = machine
                return machine

            def describe(self, instance):
                return self.running.get(instance.instance_id) or replace(instance, status="terminated", ready=False)

            def terminate(self, instance):
                with self._lock:
                    if (gone := self.running.pop(instance.instance_id, None)) is not None:
                        self.free[gone.gpu] += gone.count

            def list_owned(self):
                return list(self.running.values())

            def telemetry(self, instance):
                return []
        ''',
}
TABLE = {"kind": "racks", "racks": [{"gpu": "a100", "gpus": 8, "price": "1.25"}]}


@pytest.fixture
def racks_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The racks kind as a folder of providers/ (a second directory of the package, as a checkout's folder is)."""
    folder = tmp_path / "more_kinds" / "racks"
    folder.mkdir(parents=True)
    for name, text in KIND_FILES.items():
        (folder / name).write_text(dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.setattr(gpubot.providers, "__path__", [*gpubot.providers.__path__, str(folder.parent)])
    monkeypatch.delenv("RACKS_TOKEN", raising=False)
    forget_kinds()
    yield
    forget_kinds()
    for module in [m for m in sys.modules if m.startswith("gpubot.providers.racks")]:
        del sys.modules[module]


def test_the_folder_declares_the_kind_and_its_place_in_the_default_order(racks_kind) -> None:
    assert list(all_kinds())[:2] == ["pool", "racks"] and kind_named("racks").default_image
    policy = policy_from_dict({"providers": {"hall": TABLE}})
    assert policy.acquire.order[:2] == ["pool", "racks"]
    assert type(policy.providers["hall"]).__name__ == "RacksConfig" and policy.providers["hall"].racks[0].gpus == 8


@pytest.mark.parametrize(("table", "key", "expected"), [
    ({"rack": []}, "providers.hall.rack", "did you mean 'racks'?"),
    ({"racks": [{"gpu": "a100", "gpus": 0, "price": 1}]}, "providers.hall.racks.0.gpus", "greater than 0"),
    ({"zones": ["us-central1-a"]}, "providers.hall.zones", "no such key (unknown key"),  # another kind's key
])
def test_its_keys_are_checked_by_its_own_model(racks_kind, table: dict, key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        policy_from_dict({"providers": {"hall": {"kind": "racks", **table}}})
    assert caught.value.key == key and expected in caught.value.expected


def test_check_config_names_its_missing_secret_and_redaction_knows_it(racks_kind, monkeypatch) -> None:
    policy = policy_from_dict({"providers": {"hall": TABLE}})
    assert provider_status(policy, Settings(_env_file=None)) == {"hall": "not usable: RACKS_TOKEN is not set"}
    monkeypatch.setenv("RACKS_TOKEN", TOKEN)
    assert provider_status(policy, Settings(_env_file=None)) == {"hall": "configured"}
    assert TOKEN in Settings(_env_file=None).secrets()


def test_a_booking_typed_in_slack_lands_on_it(racks_kind, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RACKS_TOKEN", TOKEN)
    policy = policy_from_dict({"team": {"admins": ["UADMIN"]}, "booking": {"default_image": "team/torch:1"},
                               "providers": {"hall": TABLE}})
    api = FakeSlackApi()
    settings = Settings(slack_bot_token=SecretStr("xoxb-racks"), slack_signing_secret=SecretStr(SECRET),
                        slack_api_url=api.start(), database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
                        _env_file=None)
    runtime = Runtime(wire(settings, policy))
    try:
        runtime.start_background()
        Console(runtime.wired, api, SECRET, user="UALICE", channel="CTEAM").send("/gpu book a100x2 3h")
        assert api.wait_for(lambda calls: any("active on hall hall-1" in json.dumps(c.args) for c in calls), 15)
        with runtime.wired.db.session() as session:
            [booking] = booking_repo.list_bookings(session=session, owner="UALICE")
        cloud = runtime.wired.engine.providers["hall"]
        assert (booking.state, booking.provider, booking.price_per_gpu_hour) == (BookingState.ACTIVE, "hall", 1.25)
        assert [(s.name, s.image) for s in cloud.specs] == [(booking.instance_name, "team/torch:1")]
        assert cloud.free == {"a100": 6}
    finally:
        runtime.stop()
        api.stop()
