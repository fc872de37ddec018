"""`gpubot replay`: what each policy would have cost on a trace of past GPU work."""

from __future__ import annotations

import csv
import gc
import json
import tomllib
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from gpubot.cli_options import Database, database_url
from gpubot.domain.errors import ConfigError
from gpubot.domain.replay_report import assumption_lines, bound_lines, report_dict, report_table
from gpubot.domain.replay_trace import (
    TraceError,
    parse_columns,
    parse_jobs,
    parse_util,
    remap_rows,
    trace_assumptions,
)
from gpubot.domain.replay_types import gpu_types_line, suggest_gpu_types, unsold_types
from gpubot.providers.registry import kind_named
from gpubot.terminal_progress import interactive, progress_bar

__all__ = ["register"]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _document(config: Path | None, seed: int | None) -> dict:
    try:
        text = config.read_text(encoding="utf-8") if config else \
            resources.files("gpubot").joinpath("defaults.toml").read_text(encoding="utf-8")
        document = tomllib.loads(text)
    except OSError as exc:
        raise _fail(f"--config: cannot read {config}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise _fail(f"--config: {config} is not valid TOML ({exc})") from None
    if seed is not None:
        document.setdefault("replay", {})["seed"] = seed
    return document


def _rows(path: Path, what: str) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except OSError as exc:
        raise _fail(f"{what}: cannot read {path}: {exc.strerror}") from None


def _trace(document: dict, trace: Path, util: Path | None, columns: str | None = None):
    from gpubot.scheduling.replay.runner import ReplayInput

    gpu_types = document.get("replay", {}).get("gpu_types", {})
    try:
        rows = _rows(trace, "--trace")
        jobs = parse_jobs(remap_rows(rows, parse_columns(columns)) if columns else rows, gpu_types)
    except TraceError as exc:
        raise _fail(f"--trace: {exc}") from None
    try:
        return ReplayInput(jobs, parse_util(_rows(util, "--util")) if util else {})
    except TraceError as exc:
        raise _fail(f"--util: {exc}") from None


def _sold(policy) -> set[str]:
    """The GPU types the policy's clouds sell (each replayable kind says what its table sells)."""
    replays = [(kind_named(p.kind).replay, p) for p in policy.enabled_providers().values()]
    return set().union(*(replay.sells(p) for replay, p in replays if replay is not None))


def _refuse_unsold_types(document: dict, data) -> None:
    """Refuse a trace whose GPU types no cloud of any compared policy sells: every such job could only fail."""
    from gpubot.scheduling.replay.setup import policy_names, replay_config

    sold = set().union(*(_sold(replay_config(document, name)[0]) for name in policy_names(document)))
    unsold = unsold_types((job.gpu_type for job in data.jobs), sold)
    if not unsold:
        return
    mapped = document.get("replay", {}).get("gpu_types", {})
    line = gpu_types_line({**mapped, **suggest_gpu_types(unsold, sold, mapped)})
    types = " and ".join(f"{t} ({n:,} job{'s' if n != 1 else ''})" for t, n in sorted(unsold.items()))
    raise _fail(f"no cloud in this replay sells the trace's GPU type{'s' if len(unsold) > 1 else ''} {types}, so "
                f"those jobs could only fail. Map them to types the clouds sell ({', '.join(sorted(sold))}) in "
                f"the [replay] table of the config file you pass with --config, e.g.:\n  [replay]\n  {line}")


def _need_solver() -> None:
    """The lower bound is a linear program solved by scipy's HiGHS, which comes with the extra `replay`."""
    try:
        import scipy.optimize  # noqa: F401
    except ImportError:
        raise _fail("gpubot replay needs scipy for its lower bound (a linear program): "
                    "pip install '.[replay]' (in gpubot's checkout)") from None


def _moment(text: str | None, option: str) -> datetime | None:
    """`2026-11-01` or `2026-11-01T09:00` (UTC unless it says otherwise)."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _fail(f"{option}: expected a date such as 2026-11-01 or 2026-11-01T09:00, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _ledger(document: dict, database: str | None, since: str | None, until: str | None):
    """The team's own bookings and telemetry over [since, until) (default: the last 30 days), read-only."""
    from gpubot.scheduling.replay.ledger import read_ledger
    from gpubot.scheduling.replay.setup import policy_names, replay_config
    from gpubot.settings import Settings

    end = _moment(until, "--until") or datetime.now(UTC).replace(microsecond=0)
    start = _moment(since, "--since") or end - timedelta(days=30)
    if start >= end:
        raise _fail(f"--since ({start:%Y-%m-%d %H:%M}) must be before --until ({end:%Y-%m-%d %H:%M})")
    try:
        url = database_url(database) or Settings().database_url
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _fail(f"environment variable {str(first['loc'][0]).upper()}: {first['msg']}") from None
    document.setdefault("replay", {})["start"] = start.isoformat()
    try:
        busy_from = replay_config(document, policy_names(document)[0])[0].idle.util_below
        return read_ledger(url, start, end, busy_from)
    except ConfigError as exc:
        raise _fail(f"config {exc}") from None
    except TraceError as exc:
        raise _fail(str(exc)) from None


def replay(trace: Annotated[Path | None, typer.Option(help="Jobs CSV: submit_time_s, gpus, gpu_type, duration_s "
                                                           "[, job, user, project]")] = None,
           util: Annotated[Path | None, typer.Option(help="Utilisation CSV: job, t_s, gpu_util")] = None,
           config: Annotated[Path | None, typer.Option(help="Policy file with a \\[replay] table "
                                                           "(default: built-in simulated cloud)")] = None,
           policy: Annotated[list[str] | None, typer.Option(help="Policy to replay (repeat; default all)")] = None,
           out: Annotated[Path, typer.Option(help="Directory for replay.json and replay.png")] = Path("replay-out"),
           seed: Annotated[int | None, typer.Option(help="Seed for drawn idle stretches and releases")] = None,
           columns: Annotated[str | None, typer.Option(
               help="The trace's own column names: submit=…,duration=…,gpus=…,gpu_type=…[,job=…,user=…,project=…]; "
                    "submit in seconds or ISO dates")] = None,
           from_ledger: Annotated[bool, typer.Option(
               "--from-ledger", help="Replay the team's own bookings and telemetry (read-only) instead of a CSV")
           ] = False,
           database: Database = None,
           since: Annotated[str | None, typer.Option(help="With --from-ledger: from this date (default: 30 days "
                                                          "before --until)")] = None,
           until: Annotated[str | None, typer.Option(help="With --from-ledger: up to this date (default: now)")
                            ] = None,
           ) -> None:
    """Replay a trace of GPU jobs through the real engine on a virtual clock, once per policy, and compare."""
    from gpubot.scheduling.replay.run import replay_policy
    from gpubot.scheduling.replay.setup import policy_names, replay_config

    _need_solver()
    if (trace is None) == (not from_ledger):
        raise _fail("give either --trace FILE or --from-ledger")
    if not from_ledger and (database or since or until):
        raise _fail("--database, --since and --until go with --from-ledger")
    document = _document(config, seed)
    try:
        names = policy or policy_names(document)
        for name in names:
            replay_config(document, name)  # every policy is valid before the first one runs
    except ConfigError as exc:
        raise _fail(f"config {exc}") from None
    data = _ledger(document, database, since, until) if from_ledger else _trace(document, trace, util, columns)
    _refuse_unsold_types(document, data)
    # The trace, the config and every module loaded so far live until the end: frozen, they are no longer walked
    # by each full garbage collection of the replays (Philly, two policies in one run: 57.9 -> 53.5 s).
    gc.freeze()
    figures = []
    with progress_bar("jobs") as progress:
        for name in names:
            task = progress.add_task(name, total=len(data.jobs))
            outcome = replay_policy(document, name, data, on_job=lambda task=task: progress.advance(task))
            figures.append(outcome.figures)
            progress.update(task, completed=len(data.jobs))
            if not interactive():
                typer.echo(f"{name}: replayed {len(data.jobs)} jobs in {outcome.figures.replay_seconds:.1f}s",
                           err=True)
    currency = replay_config(document, names[0])[0].team.currency
    typer.echo(report_table(figures, currency))
    notes = [*assumption_lines(trace_assumptions(data.jobs, data.util), figures), *bound_lines(figures)]
    typer.echo("\n".join(notes))
    settings = replay_config(document, names[0])[1]
    meta = {"trace": str(trace) if trace else "ledger", "util": str(util) if util else None,
            "config": str(config) if config else None,
            "jobs": len(data.jobs), "currency": currency, "seed": settings.seed, "columns": columns,
            "assumptions": _plain_assumptions(trace_assumptions(data.jobs, data.util)), "notes": notes}
    _write(out, figures, meta, f"Replay of {trace.name if trace else 'the ledger'}: spend and idle waste")


def _plain_assumptions(assumed) -> dict:
    return {k: str(v) if not isinstance(v, int) else v for k, v in vars(assumed).items()}


def _write(out: Path, figures: list, meta: dict, title: str) -> None:
    """replay.json and, with matplotlib, replay.png in `out`."""
    from gpubot.scheduling.replay.chart import replay_chart

    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(report_dict(figures, meta), indent=2) + "\n", encoding="utf-8")
    try:
        chart = replay_chart(figures, str(meta["currency"]), title)
    except ImportError:
        typer.echo(f"wrote {out / 'replay.json'} "
                   "(no chart: pip install '.[charts]' in gpubot's checkout for replay.png)")
        return
    (out / "replay.png").write_bytes(chart)
    typer.echo(f"wrote {out / 'replay.json'} and {out / 'replay.png'}")


def register(app: typer.Typer) -> None:
    """Add `gpubot replay` to the CLI."""
    app.command("replay")(replay)
