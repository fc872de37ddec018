"""The team's own Slurm cluster as a provider (`kind = "slurm"`): its config, client tools, parsers and adapter."""

from __future__ import annotations

import os
import shutil

from gpubot.providers.registry import BuildContext, ProviderKind
from gpubot.providers.slurm.config import SlurmConfig

__all__ = ["KIND"]


def _build(name: str, config: SlurmConfig, context: BuildContext):
    """The adapter over the cluster's client tools; LookupError when this host has none."""
    search = config.bin_dir or os.environ.get("PATH", "")
    if shutil.which("sbatch", path=search) is None:
        raise LookupError("the Slurm client tools (sbatch, squeue, scontrol) are not on this host: install "
                          f"slurm-client or set providers.{name}.bin_dir")
    from gpubot.providers.slurm.provider import SlurmProvider

    return SlurmProvider(name, config)


def _check(provider) -> str:
    """check-config: the cluster's version, the partition and a test submit of each GPU type."""
    from gpubot.providers.slurm.check import check_cluster

    return check_cluster(provider)


# The team's own machines, asked first: a job lands there at the internal price unless it is full.
KIND = ProviderKind(name="slurm", config=SlurmConfig, build=_build, machine="host", rented=False,
                    default_image=False, order=5, check=_check,
                    bills_while_queued=False)
