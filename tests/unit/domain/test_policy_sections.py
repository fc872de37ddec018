"""The policy's tables: their documented defaults, durations in every form, currency codes, a start command that is
a command, and the image a booking gets when it names none."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.domain.policy import Policy
from gpubot.domain.policy_sections import ImageProviderPolicy, ProviderPolicy, SchedulerPolicy, TeamPolicy
from pydantic import ValidationError


def test_defaults_match_the_documented_ones():
    policy = Policy()
    assert policy.budget.thresholds == [50, 80, 100]
    assert policy.booking.max_duration == timedelta(hours=72)
    assert policy.idle.for_ == timedelta(minutes=10) and policy.idle.util_below == 15
    assert policy.health.max_temp_c == 85
    assert policy.acquire.strategy == "cheapest"
    assert policy.providers == {} and policy.fx == {}


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("10m", 600), ("6h", 21600), ("1d", 86400),
                                           ("2h30m", 9000), ("1.5h", 5400), (90, 90)])
def test_every_duration_form_is_accepted(text, seconds):
    assert SchedulerPolicy(tick=text).tick == timedelta(seconds=seconds)


@pytest.mark.parametrize("code, expected", [("usd", "in capitals, such as 'USD'"), ("dollars", "such as 'USD'")])
def test_a_currency_is_an_iso_code_in_capitals(code, expected):
    with pytest.raises(ValidationError, match=expected):
        TeamPolicy(currency=code)


def test_a_start_command_is_a_shell_command_not_cloud_config():
    with pytest.raises(ValidationError, match="a shell command, not #cloud-config"):
        ProviderPolicy(kind="x", start_command="  #cloud-config\nruncmd: []")
    assert ProviderPolicy(kind="x", start_command="python3 serve.py").start_command == "python3 serve.py"


def test_the_image_is_the_regions_then_the_providers_and_a_kind_without_images_has_none():
    images = ImageProviderPolicy(kind="x", image="ubuntu", images={"us-east-1": "ami-1"})
    assert (images.image_for("us-east-1"), images.image_for("eu-west-1")) == ("ami-1", "ubuntu")
    assert ProviderPolicy(kind="x").image_for("us-east-1") is None
