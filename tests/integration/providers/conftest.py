"""Fixtures of the provider integration tests: the real one-node Slurm cluster (tests/slurm_cluster.py)."""

from tests.slurm_cluster import slurm, slurm_cluster

__all__ = ["slurm", "slurm_cluster"]
