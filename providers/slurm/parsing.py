"""What Slurm's client tools print, read into plain data. Pure functions over text; no process is run here.

The shapes read (Slurm 22.05, and the same in later releases, whose JSON layouts changed but these did not):
- `scontrol -o show node -d` and `scontrol -o show partition P`: one record per line, `Key=value` pairs separated by
  spaces. A value may hold spaces (`OS=Linux 6.1 #1 SMP`), so a key is a word followed by `=` at the start of the line
  or after a space; a key may repeat (`-d` prints `Nodes=… GRES=…` once per node of a job), so a record is a list.
- `scontrol -o show job -d [ID]`: the same, one job per line; `GRES=gpu:a100:2(IDX:0-1)` is what the job got on its
  node, `StartTime` of a pending job is the scheduler's expected start (what `squeue --start` prints), `Unknown`
  until a backfill pass has placed it.
- GRES lists: `gpu:a100:4,gpu:h100:4`, `gpu:a100:0(IDX:N/A),gpu:h100:2(IDX:4-5)`, `gpu:2(S:0)`; commas inside the
  parentheses (`IDX:0,2-3`) belong to the entry.
- Times: `2026-12-01T21:49:26` in the time zone the tool ran in (the adapter runs them with TZ=UTC), or `Unknown`,
  `None`, `N/A`. Durations: `[days-]hours:minutes:seconds` (`1-00:00:00`, `00:05:00`), squeue's `minutes:seconds`,
  bare minutes, or `UNLIMITED` / `INFINITE` / `Partition_Limit` (no limit of the job's own: None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

__all__ = ["Gres", "Job", "Node", "Partition", "SlurmParseError", "cluster_reason", "parse_duration",
           "parse_gres", "parse_jobs", "parse_nodes", "parse_partition", "parse_records",
           "parse_submitted", "parse_time"]

_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/.]*)=")
_GRES = re.compile(r"(?P<name>[A-Za-z0-9_.-]+)(?::(?P<type>[A-Za-z0-9_.-]+))?:(?P<count>\d+)(?:\((?P<detail>[^)]*)\))?")
_NO_TIME = frozenset({"", "Unknown", "None", "N/A", "(null)"})
_NO_LIMIT = frozenset({"UNLIMITED", "INFINITE", "Partition_Limit", "NONE", "N/A", ""})
# A node in one of these states (or with one of these flags) takes no new job.
_CLOSED = frozenset({"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "FUTURE", "NOT_RESPONDING",
                     "INVAL", "MAINT", "UNKNOWN"})


class SlurmParseError(ValueError):
    """A tool printed something these parsers cannot read."""


@dataclass(frozen=True)
class Gres:
    """One generic resource entry: `gpu:a100:2(IDX:0-1)` is gpu, type a100, 2, indices (0, 1)."""

    name: str
    type: str
    count: int
    indices: tuple[int, ...] = ()

    def __str__(self) -> str:
        typed = f"{self.name}:{self.type}" if self.type else self.name
        return f"{typed}:{self.count}" + (f"(IDX:{_ranges(self.indices)})" if self.indices else "")


@dataclass(frozen=True)
class Node:
    """A node's GPUs by gres type (configured and in use), its CPUs and state."""

    name: str
    state: str
    partitions: tuple[str, ...]
    gpus: dict[str, int] = field(default_factory=dict)
    gpus_used: dict[str, int] = field(default_factory=dict)
    cpus: int = 0
    cpus_allocated: int = 0
    reason: str = ""

    @property
    def open(self) -> bool:
        """Whether the node takes new jobs (not down, drained, failing, in maintenance…)."""
        return not set(self.state.replace("*", "").replace("~", "").split("+")) & _CLOSED

    def free_gpus(self, gres_type: str) -> int:
        """GPUs of `gres_type` not allocated to any job."""
        return max(self.gpus.get(gres_type, 0) - self.gpus_used.get(gres_type, 0), 0)


@dataclass(frozen=True)
class Partition:
    """A partition's name, state, nodes and longest time limit (None: unlimited)."""

    name: str
    state: str
    nodes: str
    max_time: timedelta | None


@dataclass(frozen=True)
class Job:
    """A job as `scontrol -o show job -d` shows it."""

    job_id: str
    name: str
    user: str
    state: str
    reason: str
    partition: str
    nodes: str  # empty while pending
    gres: tuple[Gres, ...]  # what it holds on its node, with the device indices
    wanted: str  # TresPerNode, what it asked for (`gres:gpu:a100:2`)
    time_limit: timedelta | None
    start: datetime | None  # started, or expected to start while pending (None: not estimated yet)
    end: datetime | None
    comment: str

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        """The GPU device indices it holds."""
        return tuple(i for g in self.gres if g.name == "gpu" for i in g.indices)


def parse_records(text: str) -> list[list[tuple[str, str]]]:
    """Each non-empty line of `scontrol -o show …` as its (key, value) pairs, in order."""
    records = []
    for line in text.splitlines():
        keys = list(_KEY.finditer(line))
        if not keys:
            continue
        pairs = [(m.group(1), line[m.end(): keys[i + 1].start() if i + 1 < len(keys) else len(line)].strip())
                 for i, m in enumerate(keys)]
        records.append(pairs)
    return records


def _first(pairs: list[tuple[str, str]], key: str, default: str | None = None) -> str:
    for k, v in pairs:
        if k == key:
            return v
    if default is None:
        raise SlurmParseError(f"no {key}= in the record")
    return default


def _ranges(indices: tuple[int, ...]) -> str:
    parts, start = [], None
    for i, index in enumerate(indices):
        start = index if start is None else start
        if i + 1 == len(indices) or indices[i + 1] != index + 1:
            parts.append(f"{start}-{index}" if index != start else str(index))
            start = None
    return ",".join(parts)


def parse_indices(text: str) -> tuple[int, ...]:
    """`0-1,3` → (0, 1, 3); `N/A` → ()."""
    if text in ("", "N/A"):
        return ()
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise SlurmParseError(f"unreadable index range {text!r}")
        out.extend(range(int(low), int(high or low) + 1))
    return tuple(out)


def _split_outside_parentheses(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [*items, current] if current else items


def parse_gres(text: str) -> tuple[Gres, ...]:
    """A GRES list (`gpu:a100:4,gpu:h100:2(IDX:4-5)`); `(null)` or empty is none. Entries with a count suffix
    (`mps:1K`) are not GPUs and are skipped."""
    if text in ("", "(null)", "N/A"):
        return ()
    found = []
    for item in _split_outside_parentheses(text.removeprefix("gres:")):
        match = _GRES.fullmatch(item.strip().removeprefix("gres:"))
        if match is None:
            if item.strip().startswith("gpu"):
                raise SlurmParseError(f"unreadable GPU entry {item!r}")
            continue
        detail = match.group("detail") or ""
        indices = parse_indices(detail[4:]) if detail.startswith("IDX:") else ()
        found.append(Gres(match.group("name"), match.group("type") or "", int(match.group("count")), indices))
    return tuple(found)


def _gpus_by_type(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for gres in parse_gres(text):
        if gres.name == "gpu":
            counts[gres.type] = counts.get(gres.type, 0) + gres.count
    return counts


def parse_duration(text: str) -> timedelta | None:
    """A Slurm duration (`1-02:03:04`, `00:05:00`, squeue's `5:00`, bare minutes); None when there is no limit."""
    text = text.strip()
    if text in _NO_LIMIT:
        return None
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    if not (days == "" or days.isdigit()) or not all(p.isdigit() for p in parts) or len(parts) > 3:
        raise SlurmParseError(f"unreadable duration {text!r}")
    numbers = [int(p) for p in parts]
    if days:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = numbers + [0] * (3 - len(numbers))
        return timedelta(days=int(days), hours=hours, minutes=minutes, seconds=seconds)
    if len(numbers) == 1:  # minutes
        return timedelta(minutes=numbers[0])
    hours, minutes, seconds = [0] * (3 - len(numbers)) + numbers  # [hours:]minutes:seconds
    return timedelta(hours=hours, minutes=minutes, seconds=seconds)


def parse_time(text: str) -> datetime | None:
    """A Slurm timestamp printed in UTC; None for `Unknown`, `None`, `N/A`."""
    if text.strip() in _NO_TIME:
        return None
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        raise SlurmParseError(f"unreadable time {text!r}") from None


def _int(text: str) -> int:
    return int(text) if text.isdigit() else 0


def parse_nodes(text: str) -> list[Node]:
    """Every node of `scontrol -o show node -d`."""
    nodes = []
    for pairs in parse_records(text):
        partitions = _first(pairs, "Partitions", "")
        nodes.append(Node(
            name=_first(pairs, "NodeName"), state=_first(pairs, "State"),
            partitions=tuple(p for p in partitions.split(",") if p and p != "(null)"),
            gpus=_gpus_by_type(_first(pairs, "Gres", "")), gpus_used=_gpus_by_type(_first(pairs, "GresUsed", "")),
            cpus=_int(_first(pairs, "CPUEfctv", _first(pairs, "CPUTot", "0"))),
            cpus_allocated=_int(_first(pairs, "CPUAlloc", "0")), reason=_first(pairs, "Reason", "")))
    return nodes


def parse_partition(text: str) -> Partition:
    """The one partition of `scontrol -o show partition P`."""
    records = parse_records(text)
    if len(records) != 1:
        raise SlurmParseError(f"expected one partition, got {len(records)}")
    pairs = records[0]
    return Partition(_first(pairs, "PartitionName"), _first(pairs, "State", ""), _first(pairs, "Nodes", ""),
                     parse_duration(_first(pairs, "MaxTime", "UNLIMITED")))


def parse_jobs(text: str) -> list[Job]:
    """Every job of `scontrol -o show job -d [ID]`."""
    jobs = []
    for pairs in parse_records(text):
        user = _first(pairs, "UserId", "")
        jobs.append(Job(
            job_id=_first(pairs, "JobId"), name=_first(pairs, "JobName", ""), user=user.partition("(")[0],
            state=_first(pairs, "JobState"), reason=_first(pairs, "Reason", "None"),
            partition=_first(pairs, "Partition", ""), nodes=_first(pairs, "NodeList", "").replace("(null)", ""),
            gres=tuple(g for k, v in pairs if k == "GRES" for g in parse_gres(v)),
            wanted=_first(pairs, "TresPerNode", ""), time_limit=parse_duration(_first(pairs, "TimeLimit", "")),
            start=parse_time(_first(pairs, "StartTime", "")), end=parse_time(_first(pairs, "EndTime", "")),
            comment=_first(pairs, "Comment", "").replace("(null)", "")))
    return jobs


def parse_submitted(text: str) -> str:
    """The job id `sbatch --parsable` printed (`42`, or `42;cluster` on a federation)."""
    job_id = text.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmParseError(f"sbatch printed no job id: {text.strip()[:200]!r}")
    return job_id


_REASON_PREFIXES = ("sbatch: error: Batch job submission failed:", "allocation failure:", "sbatch: error:",
                    "scontrol: error:", "slurm_update error:", "scancel: error:", "squeue: error:", "error:")


def cluster_reason(stderr: str) -> str:
    """The cluster's own words in an error output (`Requested node configuration is not available`)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        for prefix in _REASON_PREFIXES:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
    return lines[-1] if lines else ""
