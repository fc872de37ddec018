"""The files of the test cluster (tests/slurm_cluster.py): slurm.conf, gres.conf, the fake GPU devices and the
munge key, all under the cluster's root. The comments in slurm.conf say why each unusual setting is there."""

from __future__ import annotations

import secrets
from pathlib import Path

__all__ = ["MAX_TIME_MINUTES", "NODE", "PARTITION", "write_files"]

NODE = "gpunode1"
PARTITION = "gpu"
MAX_TIME_MINUTES = 10


def _slurm_conf(root: Path, ctld_port: int, slurmd_port: int) -> str:
    return f"""\
ClusterName=gpubot
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
# listen on 127.0.0.1 only (the default is every address)
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# batch_sched_delay=0: a job starts about 1 s after submit (the default batches for 3 s);
# bf_interval=1: the backfill pass that sets a pending job's expected start runs every second (default 30 s)
SchedulerParameters=batch_sched_delay=0,bf_interval=1
GresTypes=gpu
KillWait=5
ReturnToService=2
# trust the config, not the hardware: 16 CPUs on a 2-CPU box (else the node drains, and CPUs run out before GPUs)
SlurmdParameters=config_overrides
NodeName={NODE} NodeAddr=127.0.0.1 CPUs=16 RealMemory=16000 Gres=gpu:a100:4,gpu:h100:4 State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime={MAX_TIME_MINUTES} State=UP
"""


def _gres_conf(root: Path) -> str:
    return (f"AutoDetect=off\nNodeName={NODE} Name=gpu Type=a100 File={root}/dev/gpu[0-3]\n"
            f"NodeName={NODE} Name=gpu Type=h100 File={root}/dev/gpu[4-7]\n")


def write_files(root: Path, ctld_port: int, slurmd_port: int) -> None:
    """Write the cluster's config, devices and munge key under `root` (the key is kept when there is one)."""
    for sub in ("etc", "run", "log", "state", "spool", "munge", "dev", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # the test user's jobs work in root/tmp
    (root / "munge").chmod(0o755)  # munged: every directory above its socket needs o+x
    (root / "tmp").chmod(0o1777)
    for index in range(8):  # a GPU's File= must be a character device: a symlink to /dev/null is one
        link = root / "dev" / f"gpu{index}"
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/null")
    (root / "etc" / "slurm.conf").write_text(_slurm_conf(root, ctld_port, slurmd_port))
    (root / "etc" / "gres.conf").write_text(_gres_conf(root))
    key = root / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
