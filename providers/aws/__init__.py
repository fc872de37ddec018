"""AWS EC2: GPU virtual machines through boto3 (the optional extra `gpubot[aws]`)."""

from __future__ import annotations

from gpubot.providers.aws.config import AwsConfig
from gpubot.providers.registry import BuildContext, ProviderKind

__all__ = ["KIND"]


def _build(name: str, config: AwsConfig, context: BuildContext):
    try:
        import boto3
    except ImportError:
        raise LookupError("boto3 is not installed (in gpubot's checkout: pip install '.[aws]')") from None
    if boto3.Session().get_credentials() is None:
        raise LookupError("no AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile)")
    from gpubot.providers.aws.adapter import AwsEc2

    return AwsEc2(name, config)


KIND = ProviderKind(name="aws", config=AwsConfig, build=_build, machine="vm", rented=True, default_image=False,
                    order=30)
