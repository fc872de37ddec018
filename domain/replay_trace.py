"""Replay traces: parsing job and utilisation CSV rows, slot lengths, idle stretches and their timelines.

Pure: the caller reads the files and passes rows in; randomness comes from a seeded `random.Random`.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

__all__ = [
    "COLUMN_NAMES",
    "Stretch",
    "TraceAssumptions",
    "TraceError",
    "TraceJob",
    "booked_seconds",
    "draw_stretches",
    "idle_stretches",
    "job_stretches",
    "parse_columns",
    "parse_jobs",
    "parse_util",
    "remap_rows",
    "trace_assumptions",
    "transitions",
]

HOUR = 3600
REQUIRED = ("submit_time_s", "gpus", "gpu_type", "duration_s")


class TraceError(ValueError):
    """A trace row that cannot be replayed; the message names the file line and the column."""


@dataclass(frozen=True)
class TraceJob:
    """One job of the trace: when it was submitted, its shape and how long it ran."""

    key: str
    submit_s: int
    gpus: int
    gpu_type: str
    duration_s: int
    user: str = "trace"
    project: str | None = None
    asked_gpus: float | None = None  # the fractional GPU count the trace asked for, rounded up to `gpus`


@dataclass(frozen=True)
class Stretch:
    """An idle stretch in job time: [start_s, end_s) seconds from the job's start, at `util` %."""

    start_s: int
    end_s: int
    util: float


def _number(row: Mapping[str, str], column: str, line: int, low: float = 0) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"line {line}: {column} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < low:
        raise TraceError(f"line {line}: {column} must be a number ≥ {low:g}, got {text!r}")
    return value


def _job(row: Mapping[str, str], line: int, gpu_types: Mapping[str, str]) -> TraceJob:
    missing = [c for c in REQUIRED if c not in row]
    if missing:
        raise TraceError(f"line {line}: missing column(s) {', '.join(missing)} (needed: {', '.join(REQUIRED)})")
    raw_type = (row.get("gpu_type") or "").strip()
    gpu = gpu_types.get(raw_type, raw_type)
    if not gpu:
        raise TraceError(f"line {line}: gpu_type is empty")
    asked = _number(row, "gpus", line)
    if asked <= 0:
        raise TraceError(f"line {line}: gpus must be a number > 0, got {row['gpus']!r}")
    gpus = math.ceil(asked)  # a share of a GPU is booked as a whole one: reported as an assumption
    duration = int(_number(row, "duration_s", line, 1))
    key = (row.get("job") or row.get("job_id") or f"line-{line}").strip()
    project = (row.get("project") or row.get("vc") or "").strip() or None
    return TraceJob(key, int(_number(row, "submit_time_s", line)), gpus, gpu, duration,
                    (row.get("user") or "").strip() or "trace", project, asked if asked != gpus else None)


def parse_jobs(rows: Iterable[Mapping[str, str]], gpu_types: Mapping[str, str] | None = None) -> list[TraceJob]:
    """Jobs from CSV rows (header on line 1), ordered by submission; `gpu_types` maps trace types to ours."""
    jobs = [_job(row, line, gpu_types or {}) for line, row in enumerate(rows, start=2)]
    if not jobs:
        raise TraceError("the trace has no jobs")
    seen: set[str] = set()
    for job in jobs:
        if job.key in seen:
            raise TraceError(f"job {job.key!r} appears twice")
        seen.add(job.key)
    return sorted(jobs, key=lambda j: (j.submit_s, j.key))


def parse_util(rows: Iterable[Mapping[str, str]]) -> dict[str, list[tuple[int, float]]]:
    """Utilisation samples per job (`job` or `job_id`, `t_s`, `gpu_util`), in time order."""
    samples: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for line, row in enumerate(rows, start=2):
        key = (row.get("job") or row.get("job_id") or "").strip()
        if not key:
            raise TraceError(f"line {line}: the utilisation row names no job (column job or job_id)")
        util = _number(row, "gpu_util", line)
        if util > 100:
            raise TraceError(f"line {line}: gpu_util must be 0..100, got {row['gpu_util']!r}")
        samples[key].append((int(_number(row, "t_s", line)), util))
    return {key: sorted(values) for key, values in samples.items()}


COLUMN_NAMES = {"submit": "submit_time_s", "duration": "duration_s", "gpus": "gpus", "gpu_type": "gpu_type",
                "job": "job", "user": "user", "project": "project"}


def parse_columns(text: str) -> dict[str, str]:
    """`--columns submit=created,duration=runtime,...` → {our column: the trace's column}."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        ours, sep, theirs = part.partition("=")
        ours, theirs = ours.strip(), theirs.strip()
        if not sep or not theirs:
            raise TraceError(f"--columns: {part!r} is not NAME=COLUMN")
        if ours not in COLUMN_NAMES:
            raise TraceError(f"--columns: unknown name {ours!r} (names: {', '.join(COLUMN_NAMES)})")
        mapping[ours] = theirs
    return mapping


def _seconds_or_date(text: str, line: int, column: str) -> float | datetime:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise TraceError(f"line {line}: {column} must be seconds or an ISO date, got {text!r}") from None
    if moment.tzinfo is None:
        raise TraceError(f"line {line}: {column} {text!r} has no time zone (add Z or +HH:MM)")
    return moment


def remap_rows(rows: Sequence[Mapping[str, str]], mapping: Mapping[str, str]) -> list[dict[str, str]]:
    """The trace's rows under our column names (`mapping`: ours → theirs); submission times given as ISO dates
    become seconds after the earliest one."""
    missing = sorted({theirs for theirs in mapping.values() if rows and theirs not in rows[0]})
    if missing:
        raise TraceError(f"--columns: the trace has no column {', '.join(missing)} "
                         f"(it has {', '.join(rows[0]) if rows else 'none'})")
    renamed = [{**row, **{COLUMN_NAMES[ours]: row.get(theirs, "") for ours, theirs in mapping.items()}}
               for row in rows]
    submits = [_seconds_or_date(row.get("submit_time_s", ""), line, "submit")
               for line, row in enumerate(renamed, start=2)]
    dates = [s for s in submits if isinstance(s, datetime)]
    if dates and len(dates) != len(submits):
        raise TraceError("submit mixes seconds and ISO dates")
    if dates:
        first = min(dates)
        for row, moment in zip(renamed, dates, strict=True):
            row["submit_time_s"] = str(int((moment - first).total_seconds()))
    return renamed


@dataclass(frozen=True)
class TraceAssumptions:
    """What the replay assumed about a trace: where utilisation came from and how fractional GPUs were booked."""

    jobs: int
    measured: int  # jobs with utilisation samples of their own
    drawn: int  # jobs without: their idle stretches were drawn from a job that has samples
    busy: int  # jobs without, and no job to draw from: counted busy for their whole run
    rounded: int  # jobs that asked for a fraction of a GPU count, booked rounded up
    rounded_gpu_hours: Decimal  # GPU-hours the rounding added to the trace's work


def trace_assumptions(jobs: Sequence[TraceJob], util: Mapping[str, Sequence[tuple[int, float]]]
                      ) -> TraceAssumptions:
    """Count what the replay of `jobs` will assume (job_stretches draws for jobs without samples)."""
    measured = sum(bool(util.get(j.key)) for j in jobs)
    unmeasured = len(jobs) - measured
    rounded = [j for j in jobs if j.asked_gpus is not None]
    added = sum((Decimal(repr(j.gpus - j.asked_gpus)) * j.duration_s for j in rounded), Decimal(0)) / 3600
    return TraceAssumptions(len(jobs), measured, unmeasured if measured else 0, 0 if measured else unmeasured,
                            len(rounded), added)


def booked_seconds(run_s: int, factor: float) -> int:
    """The slot a person books for a run: run time × over-booking factor, rounded up to the hour (≥ 1 h)."""
    return max(1, math.ceil(round(run_s * factor, 6) / HOUR)) * HOUR


def idle_stretches(samples: Sequence[tuple[int, float]], below: float, step_s: int = 60) -> list[Stretch]:
    """Runs of consecutive samples under `below` %; each sample covers `step_s` (a gap ends a run)."""
    stretches: list[Stretch] = []
    run: list[tuple[int, float]] = []
    for t, util in sorted(samples):
        if run and (util >= below or t - run[-1][0] > step_s):
            stretches.append(_stretch(run, step_s))
            run = []
        if util < below:
            run.append((t, util))
    if run:
        stretches.append(_stretch(run, step_s))
    return stretches


def _stretch(run: list[tuple[int, float]], step_s: int) -> Stretch:
    return Stretch(run[0][0], run[-1][0] + step_s, round(sum(u for _, u in run) / len(run), 2))


def draw_stretches(rng: random.Random, donors: Sequence[tuple[int, Sequence[Stretch]]], duration_s: int
                   ) -> list[Stretch]:
    """Idle stretches for a job without samples: a random donor's (duration, stretches), placed at the same
    relative position in this job, lengths kept, cut at the job's end."""
    if not donors:
        return []
    donor_duration, stretches = donors[rng.randrange(len(donors))]
    drawn = []
    for s in stretches:
        start = int(s.start_s * duration_s / max(donor_duration, 1))
        end = min(duration_s, start + s.end_s - s.start_s)
        if end > start:
            drawn.append(Stretch(start, end, s.util))
    return drawn


def job_stretches(jobs: Sequence[TraceJob], util: Mapping[str, Sequence[tuple[int, float]]], below: float,
                  seed: int) -> dict[str, list[Stretch]]:
    """Every job's idle stretches: from its own samples, else drawn from the jobs that have samples."""
    own = {j.key: [s for s in idle_stretches(util[j.key], below) if s.start_s < j.duration_s]
           for j in jobs if util.get(j.key)}
    donors = [(j.duration_s, own[j.key]) for j in jobs if j.key in own]
    rng = random.Random(seed)
    return {j.key: own[j.key] if j.key in own else draw_stretches(rng, donors, j.duration_s) for j in jobs}


def transitions(stretches: Sequence[Stretch], offset_s: int, duration_s: int, busy_util: float
                ) -> list[tuple[int, float]]:
    """(seconds after the slot starts, util) at each change, for a piece of a job resumed at job time
    `offset_s`: busy at the start, each idle stretch's start and end, and 0 % once the job is done."""
    points = [(0, busy_util)]
    for s in sorted(stretches, key=lambda s: s.start_s):
        start, end = max(s.start_s, offset_s) - offset_s, min(s.end_s, duration_s) - offset_s
        if end <= start or end <= 0:
            continue
        points += [(start, s.util), (end, busy_util)]
    points.append((duration_s - offset_s, 0.0))
    merged: list[tuple[int, float]] = []
    for at, value in points:
        if merged and merged[-1][0] == at:
            merged[-1] = (at, value)
        else:
            merged.append((at, value))
    return merged
