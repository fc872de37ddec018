"""The Provider for the team's own Slurm cluster, over Slurm's client tools on the host gpubot runs on.

Decisions:
- Offers come from the nodes of the partition (`scontrol -o show node -d`): one offer per request, at the
  configured internal price, `available` when an open node (not down, drained, failing) has that many GPUs of the
  gres type free and a CPU to spare; when open nodes hold that many but are busy now, `available` and `queued`:
  the job is submitted and waits in Slurm's own queue (its reason and expected start shown while it boots, and
  `acquire.burst_after` bounding the wait when another provider has GPUs free). Only on closed nodes it is not
  available. A request no node of the partition could ever hold (9 GPUs on 8-GPU nodes,
  a type the partition lacks) is refused as InvalidRequest in the cluster's own words, which
  `sbatch --test-only` gives without submitting anything ("Requested node configuration is not available").
- A launch is `sbatch` of a holder script (providers.startup.slurm_batch_script: the agent and the start command
  beside a `sleep` that holds the GPUs) named `spec.name` (`gpubot-<booking>-<nonce>`), with the comment
  `gpubot-booking=<id>`, `--gres=gpu:<type>:<n> --nodes=1 --time=<minutes>` in the partition (and the account and
  QOS when configured), `--export=NONE` (nothing of gpubot's environment reaches the job), run as the person's
  cluster user: `--uid/--gid` when gpubot runs as root or as SlurmUser (else the tools run as gpubot's user, and
  only a person mapped to that same user can book). Someone with no cluster user in `users` (or whose user does
  not exist on this host) is refused with NoAccess, so the engine moves on to the next provider.
- The time limit is the booked duration rounded up to whole minutes (Slurm's unit). Past the partition's MaxTime
  it is refused (PastTimeLimit) before anything is submitted: gpubot submits and extends as an operator, whom
  Slurm would let pass the limit, leaving the job pending for ever (`PartitionTimeLimit`) or running past it.
- `describe` reads `scontrol -o show job -d`: RUNNING is ready, its Connect line naming the node and, as a
  shell comment, the GPUs the job holds (`ssh alice@gpunode1  # gpu:a100:2(IDX:0-1)`); PENDING, CONFIGURING and
  requeued jobs are "pending"; PREEMPTED is "preempted"; every ended state (CANCELLED by a release or an admin,
  TIMEOUT, FAILED, NODE_FAIL, COMPLETED…) and a job the controller no longer knows are "terminated", with
  `stopped_at` its EndTime when known. The job's facts travel in `Instance.extra` (see SlurmProvider.describe).
- `terminate` is `scancel`: it returns at once, and a job already gone is done. `list_owned` is every job whose
  name is a gpubot tag or whose comment is `gpubot-booking=…`, pending or running (or preempted).
- `extend(instance, by)` raises the job's TimeLimit by `by` (`scontrol update JobId=… TimeLimit=…`, the new
  limit in whole minutes, so a retry does not extend twice); past MaxTime it is PastTimeLimit.
- The agent pushes telemetry; this adapter reports none itself.
"""

from __future__ import annotations

import contextlib
import math
import os
import pwd
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from gpubot.domain.errors import InvalidRequest, NoAccess, PastTimeLimit, ProviderError
from gpubot.domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.domain.spot import PREEMPTED
from gpubot.providers.slurm.commands import JobGone, SlurmCommands
from gpubot.providers.slurm.config import SlurmConfig
from gpubot.providers.slurm.parsing import (
    Job,
    Node,
    parse_gres,
    parse_jobs,
    parse_nodes,
    parse_partition,
    parse_submitted,
)
from gpubot.providers.startup import slurm_batch_script

__all__ = ["COMMENT_KEY", "SlurmProvider", "availability", "instance_status"]

COMMENT_KEY = "gpubot-booking"
_PENDING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING"})
_SUSPENDED = frozenset({"SUSPENDED", "STOPPED"})


def instance_status(state: str) -> str:
    """Our instance status for a Slurm job state: running, pending, suspended, preempted or terminated."""
    if state == "RUNNING":
        return "running"
    if state in _PENDING:
        return "pending"
    if state in _SUSPENDED:
        return "suspended"
    return PREEMPTED if state == "PREEMPTED" else "terminated"


class SlurmProvider:
    """A Slurm partition as a provider (see the module docstring for what each call does)."""

    kind = "slurm"

    def __init__(self, name: str, config: SlurmConfig, *, commands: SlurmCommands | None = None,
                 users: Callable[[str], pwd.struct_passwd] = pwd.getpwnam,
                 euid: Callable[[], int] = os.geteuid) -> None:
        self.name, self.config = name, config
        self._cli = commands or SlurmCommands(name, config.slurm_conf or os.environ.get("SLURM_CONF"),
                                              config.bin_dir, config.command_timeout.total_seconds())
        self._users, self._euid = users, euid

    # -- offers -------------------------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer for the partition when it has nodes of the GPU type; available when one has enough free."""
        gres_type = self.config.gpu_types.get(request.gpu)
        regions = self.config.regions or [self.config.partition]
        if gres_type is None or request.spot or (request.region and request.region not in regions):
            return []
        nodes = self.partition_nodes()
        largest = max((n.gpus.get(gres_type, 0) for n in nodes), default=0)
        if largest < request.count:
            self._refuse_shape(gres_type, request.count, largest)
        available, queued = availability(nodes, gres_type, request.count)
        return [Offer(self.name, self.config.offer_region, request.gpu, request.count,
                      self.config.prices[request.gpu], self.config.currency, available=available, queued=queued,
                      ref=f"gpu:{gres_type}")]

    def partition_nodes(self) -> list[Node]:
        """The nodes of the configured partition, as `scontrol -o show node -d` shows them now."""
        return [n for n in self._cli.read(parse_nodes, "scontrol", "-o", "show", "node", "-d")
                if self.config.partition in n.partitions]

    def test_submit(self, gres_type: str, count: int) -> str | None:
        """The cluster's refusal of a job of `count` GPUs of `gres_type` (`sbatch --test-only`: nothing is
        submitted), or None when it would take it."""
        done = self._cli.attempt("sbatch", "--test-only", *self._placement(gres_type, count, 1), "--wrap=true")
        return None if done.returncode == 0 else str(self._cli.error("sbatch", done.stderr))

    def version(self) -> str:
        """The Slurm client tools' version (`sbatch --version`: `slurm 22.05.8`)."""
        return self._cli.run("sbatch", "--version").strip()

    def _refuse_shape(self, gres_type: str, count: int, largest: int) -> None:
        """Ask the cluster (`sbatch --test-only`, nothing submitted) about a shape no node seems to hold; raise
        InvalidRequest in its words when it refuses."""
        done = self._cli.attempt("sbatch", "--test-only", *self._placement(gres_type, count, 1), "--wrap=true")
        if done.returncode == 0:
            return
        error = self._cli.error("sbatch", done.stderr)
        if isinstance(error, InvalidRequest):
            raise InvalidRequest(self.name, f"{error.detail} (the most gpu:{gres_type} one node of partition "
                                            f"{self.config.partition} has is {largest})")
        raise error

    def _placement(self, gres_type: str, count: int, minutes: int) -> list[str]:
        args = [f"--partition={self.config.partition}", "--nodes=1", f"--gres=gpu:{gres_type}:{count}",
                f"--time={minutes}"]
        args += [f"--account={self.config.account}"] if self.config.account else []
        return args + ([f"--qos={self.config.qos}"] if self.config.qos else [])

    # -- launch -------------------------------------------------------------------------------------------
    def cluster_user(self, owner: str | None) -> str:
        """The cluster user a Slack user books as; NoAccess when they have none."""
        user = self.config.users.get(owner or "")
        if user is None:
            raise NoAccess(self.name, f"{owner or 'this booking'} has no user on this cluster: an admin adds "
                                      f"them to users in [providers.{self.name}]")
        return user

    def max_time(self) -> timedelta | None:
        """The partition's MaxTime: the longest one job may hold its GPUs (None: unlimited)."""
        return self._cli.read(parse_partition, "scontrol", "-o", "show", "partition", self.config.partition).max_time

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Submit the holder job as the booking's person; it comes back pending, or running already."""
        gres_type = self.config.gpu_types.get(offer.gpu)
        if gres_type is None or spec.duration is None:
            raise InvalidRequest(self.name, f"cannot launch {offer.gpu} for {spec.duration or 'no set time'}")
        user = self.cluster_user(spec.owner)
        minutes = self._within_max_time(_minutes(spec.duration))
        args = ["--parsable", f"--job-name={spec.name}", f"--comment={COMMENT_KEY}={spec.booking_id}",
                *self._placement(gres_type, offer.count, minutes), f"--chdir={self.config.workdir}",
                "--output=/dev/null", "--export=NONE", *self._submitted_as(user)]
        script = slurm_batch_script(replace(spec, start_command=spec.start_command or self.config.start_command))
        job_id = self._cli.read(parse_submitted, "sbatch", *args, stdin=script)
        submitted = Instance(self.name, job_id, spec.name, self.config.offer_region, "pending", gpu=offer.gpu,
                             count=offer.count, extra={"job_id": job_id, "cluster_user": user})
        try:
            return self.describe(submitted)
        except ProviderError:  # it is submitted: the engine must get its id whatever happens now
            return submitted

    def _submitted_as(self, user: str) -> list[str]:
        try:
            entry = self._users(user)
        except KeyError:
            raise NoAccess(self.name, f"cluster user {user!r} does not exist on the host gpubot runs on") from None
        return [] if entry.pw_uid == self._euid() else [f"--uid={entry.pw_uid}", f"--gid={entry.pw_gid}"]

    def _within_max_time(self, minutes: int) -> int:
        limit = self.max_time()
        if limit is not None and timedelta(minutes=minutes) > limit:
            raise PastTimeLimit(self.name, f"{minutes} min is longer than partition {self.config.partition} "
                                           f"allows (MaxTime {_clock(limit)})", limit=limit,
                                asked=timedelta(minutes=minutes))
        return minutes

    # -- jobs ---------------------------------------------------------------------------------------------
    def describe(self, instance: Instance) -> Instance:
        """The job's state as an Instance. `extra` holds the job's facts: job_id, booking_id (from the comment, else
        the name), state, reason (Slurm's, e.g.
        Resources while pending), cluster_user, node, gres (`gpu:a100:2(IDX:0-1)`), gpu_indices, time_limit,
        start (the expected start while pending, None until the scheduler has placed it) and end."""
        try:
            job = self._job(instance.instance_id)
        except JobGone:
            return replace(instance, status="terminated", ready=False, ssh=None)
        return self._instance(job)

    def terminate(self, instance: Instance) -> None:
        """Cancel the job; a job already gone counts as done."""
        with contextlib.suppress(JobGone):
            self._cli.run("scancel", instance.instance_id)

    def list_owned(self) -> list[Instance]:
        """gpubot's jobs (by name or comment) that are pending, running, suspended or preempted."""
        jobs = self._cli.read(parse_jobs, "scontrol", "-o", "show", "job", "-d")
        found = [self._instance(job) for job in jobs if _is_ours(job)]
        return [instance for instance in found if instance.status != "terminated"]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """None from Slurm: the holder's agent pushes the job's GPUs."""
        return []

    def extend(self, instance: Instance, by: timedelta) -> Instance:
        """Raise the job's time limit by `by`; PastTimeLimit past the partition's MaxTime."""
        try:
            job = self._job(instance.instance_id)
        except JobGone:
            raise InvalidRequest(self.name, f"job {instance.instance_id} is gone") from None
        if instance_status(job.state) == "terminated":
            raise InvalidRequest(self.name, f"job {job.job_id} has ended ({job.state})")
        if job.time_limit is not None:
            minutes = self._within_max_time(_minutes(job.time_limit + by))
            self._cli.run("scontrol", "update", f"JobId={job.job_id}", f"TimeLimit={minutes}")
        return self.describe(instance)

    def _job(self, job_id: str) -> Job:
        jobs = self._cli.read(parse_jobs, "scontrol", "-o", "show", "job", "-d", job_id)
        if len(jobs) != 1 or jobs[0].job_id != job_id:
            raise JobGone(job_id)
        return jobs[0]

    def _instance(self, job: Job) -> Instance:
        status = instance_status(job.state)
        wanted = next(iter(parse_gres(job.wanted)), None)
        gpu = next((g for g, t in self.config.gpu_types.items() if wanted and t == wanted.type), "")
        running = status == "running" and bool(job.nodes)
        extra = {"job_id": job.job_id, "booking_id": _booking_of(job), "state": job.state, "reason": job.reason,
                 "cluster_user": job.user,
                 "node": job.nodes or None, "gres": ",".join(str(g) for g in job.gres) or None,
                 "gpu_indices": job.gpu_indices, "time_limit": job.time_limit, "start": job.start, "end": job.end}
        ended = status in ("terminated", PREEMPTED)
        queued = status == "pending" and job.reason not in ("", "None")
        return Instance(self.name, job.job_id, job.name, self.config.offer_region, status, ready=running,
                        ssh=self._ssh(job.user, job.nodes, extra["gres"]) if running else None, gpu=gpu,
                        count=wanted.count if wanted else 0, stopped_at=job.end if ended else None,
                        waiting=job.reason if queued else None, expected_start=job.start if queued else None,
                        running_since=job.start if running else None, extra=extra)

    def _ssh(self, user: str, node: str, gres: str | None) -> str:
        """The Connect line, naming the GPUs the job got as a shell comment: it is still pasted and run as is."""
        jump = f"-J {user}@{self.config.ssh_jump} " if self.config.ssh_jump else ""
        return f"ssh {jump}{user}@{node}" + (f"  # {gres}" if gres else "")


def availability(nodes: list[Node], gres_type: str, count: int) -> tuple[bool, bool]:
    """(available, queued) of an offer of `count` GPUs of `gres_type` on these nodes: free now on an open node (with
    a CPU to spare) is available at once; held by an open node but busy now is available with a wait in Slurm's
    own queue (queued); only on closed nodes (down, drained…), or on none, is not available."""
    open_nodes = [n for n in nodes if n.open and n.gpus.get(gres_type, 0) >= count]
    if any(n.free_gpus(gres_type) >= count and n.cpus > n.cpus_allocated for n in open_nodes):
        return True, False
    return bool(open_nodes), bool(open_nodes)


def _is_ours(job: Job) -> bool:
    return parse_instance_tag(job.name) is not None or job.comment.startswith(f"{COMMENT_KEY}=")


def _booking_of(job: Job) -> int | None:
    """The booking a job is for: from its comment (`gpubot-booking=42`), else from its gpubot name."""
    _, _, value = job.comment.partition(f"{COMMENT_KEY}=")
    if value.strip().isdigit():
        return int(value.strip())
    tag = parse_instance_tag(job.name)
    return tag[0] if tag else None


def _minutes(duration: timedelta) -> int:
    """Whole minutes, rounded up: Slurm's time limits count minutes."""
    return max(1, math.ceil(duration.total_seconds() / 60))


def _clock(limit: timedelta) -> str:
    minutes = int(limit.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    return (f"{days}-" if days else "") + f"{rest // 60:02d}:{rest % 60:02d}:00"
