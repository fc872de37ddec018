"""`[providers.NAME]` of kind "aws". Credentials come from boto3's own chain (environment, profiles, roles)."""

from __future__ import annotations

from typing import Literal

from gpubot.domain.policy_sections import ImageProviderPolicy
from pydantic import Field

__all__ = ["DEFAULT_IMAGE_OWNERS", "AwsConfig"]

DEFAULT_IMAGE_OWNERS = ("amazon", "self", "898082745236")  # AWS's own AMIs, the team's, the Deep Learning AMIs


class AwsConfig(ImageProviderPolicy):
    """AWS EC2: the common keys, the AMI (`image`, or `images` per region) and the EC2 key pair."""

    kind: Literal["aws"] = "aws"
    ssh_key_name: str | None = None  # an EC2 key pair for the default user
    # Whose AMIs may boot: a booking's `--image` (an `ami-…` id or a name pattern) and the name patterns looked up
    # must belong to one of these (DescribeImages' Owners: account ids, or the aliases amazon, aws-marketplace,
    # self). The AMIs set here in `image`/`images` are the team's own choice and are not checked.
    image_owners: list[str] = Field(default_factory=lambda: list(DEFAULT_IMAGE_OWNERS), min_length=1)

