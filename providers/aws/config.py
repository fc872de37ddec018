"""`[providers.NAME]` of kind "aws". Credentials come from boto3's own chain (environment, profiles, roles)."""

from __future__ import annotations

from typing import Literal

from gpubot.domain.policy import ImageProviderPolicy

__all__ = ["AwsConfig"]


class AwsConfig(ImageProviderPolicy):
    """AWS EC2: the common keys, the AMI (`image`, or `images` per region) and the EC2 key pair."""

    kind: Literal["aws"] = "aws"
    ssh_key_name: str | None = None  # an EC2 key pair for the default user
