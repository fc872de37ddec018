"""check-config for a `slurm` provider: the client tools' version, the partition as the cluster sees it, and whether
the cluster would take a job of one GPU of each configured type (`sbatch --test-only`, nothing submitted).

It also says what would stop a booking later: a gres type no node of the partition has, mapped users that do not
exist on this host, and gpubot not running as root (then it can submit only as its own user)."""

from __future__ import annotations

import os
import pwd

from gpubot.domain.errors import ProviderError
from gpubot.providers.slurm.provider import SlurmProvider

__all__ = ["check_cluster"]


def check_cluster(provider: SlurmProvider) -> str:
    """One line on the cluster and partition; LookupError when the cluster cannot be asked or refuses every type."""
    config = provider.config
    try:
        version, nodes, limit = provider.version(), provider.partition_nodes(), provider.max_time()
    except ProviderError as exc:
        raise LookupError(f"the cluster does not answer: {exc}") from None
    if not nodes:
        raise LookupError(f"partition {config.partition} has no nodes")
    found, problems = [], []
    for gpu, gres_type in sorted(config.gpu_types.items()):
        largest = max((n.gpus.get(gres_type, 0) for n in nodes), default=0)
        refusal = provider.test_submit(gres_type, 1) if largest else "no node of the partition has it"
        if refusal is None:
            found.append(f"{gpu}=gpu:{gres_type} (up to {largest} a node)")
        else:
            problems.append(f"{gpu}=gpu:{gres_type}: {refusal}")
    if not found:
        raise LookupError(f"partition {config.partition} takes none of gpu_types: {'; '.join(problems)}")
    missing = sorted(user for user in set(config.users.values()) if not _exists(user))
    if missing:
        problems.append(f"users not on this host: {', '.join(missing)}")
    if os.geteuid() != 0:
        problems.append("gpubot is not root: it can submit only as its own user")
    line = (f"{version}, partition {config.partition}: {len(nodes)} node(s), {', '.join(found)}, MaxTime "
            f"{_limit(limit)}")
    return line + (f" — WARNING: {'; '.join(problems)}" if problems else "")


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def _limit(limit) -> str:
    if limit is None:
        return "unlimited"
    minutes = int(limit.total_seconds() // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"
