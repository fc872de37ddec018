"""The team's own Slurm cluster as a provider (`kind = "slurm"`): its config, client tools, parsers and adapter."""

from gpubot.providers.slurm.config import SlurmConfig, slurm_config
from gpubot.providers.slurm.provider import SlurmProvider

__all__ = ["SlurmConfig", "SlurmProvider", "slurm_config"]
