"""`--image` through `gpubot serve` and signed HTTP against AWS (moto's server) (issue #27): an AMI of an owner
not in `[providers.aws] image_owners` is refused at launch, and the booking message names the AMI and the owners
allowed; an AMI of an allowed owner launches."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from tests.e2e.provider_clouds import AWS_ENV, AWS_IMAGE
from tests.e2e.server_kit import as_shown, book, free_port, serving, wait_call

CONFIG = f"""
[team]
admins = ["UADMIN"]

[scheduler]
tick = "1s"

[providers.aws]
kind = "aws"
regions = ["us-east-1"]
image = "{AWS_IMAGE}"
image_owners = ["self", "898082745236"]  # the team's AMIs and the Deep Learning AMIs
"""

# moto's own AMIs: a Deep Learning AMI (owner 898082745236) and a Canonical Ubuntu one (owner 099720109477).
DLAMI, UBUNTU = "ami-999844e0", "ami-1e749f67"


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> Iterator:
    port = free_port()
    from moto.server import ThreadedMotoServer  # here, not at collection (tests/conftest.py, VENDOR_GROUPS)

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    try:
        env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", **AWS_ENV}
        with serving(tmp_path_factory.mktemp("image-owners"), CONFIG, extra_env=env) as running:
            yield running
    finally:
        moto.stop()


def _booking(bot, label: str):
    with bot.db.session() as session:
        return repo.get_booking(int(label[1:]), session=session)


def test_an_ami_of_an_owner_not_allowed_is_refused_naming_the_owners_allowed(bot):
    label = book(bot, "UALICE", f"a10gx1 1h --image {UBUNTU}")
    shown = as_shown(wait_call(bot, "chat.update", f"image {UBUNTU} refused")["text"])
    assert f"aws us-east-1: image {UBUNTU} refused: only AMIs owned by self, 898082745236 may boot there" in shown
    assert _booking(bot, label).instance_id is None


def test_an_ami_of_an_allowed_owner_launches(bot):
    label = book(bot, "UBOB", f"a10gx1 1h --image {DLAMI}")
    deadline = time.monotonic() + 30
    while (booking := _booking(bot, label)).state not in (BookingState.BOOTING, BookingState.ACTIVE):
        assert time.monotonic() < deadline, f"{label} is still {booking.state}"
        time.sleep(0.1)
    assert booking.provider == "aws" and booking.instance_id
