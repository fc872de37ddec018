"""Terminal reports: `gpubot report cost`, `gpubot export ledger`, `gpubot digest`."""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, tzinfo
from decimal import Decimal
from pathlib import Path
from typing import Annotated

import typer

from gpubot.cli_options import Database
from gpubot.domain.budget import month_bounds
from gpubot.domain.money import CENT
from gpubot.domain.policy import Policy
from gpubot.domain.report_text import hours
from gpubot.settings import Settings

__all__ = ["parse_instant", "register"]

Loader = Callable[[str | None], tuple[Settings, Policy]]  # --database (None: DATABASE_URL) → settings, policy
FORMATS = ("table", "csv", "json")
GROUPINGS = ("user", "project", "provider", "gpu")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def parse_instant(text: str, tz: tzinfo, end: bool = False) -> datetime:
    """`YYYY-MM`, `YYYY-MM-DD` (local, whole days/months: an `end` bound includes them) or an ISO date-time."""
    try:
        if len(text) == 7:
            start, following, _ = month_bounds(datetime.strptime(text + "-15", "%Y-%m-%d").replace(tzinfo=tz), tz)
            return following if end else start
        if len(text) == 10:
            day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=tz)
            return (day + timedelta(days=1) if end else day).astimezone(UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"got {text!r}, expected YYYY-MM, YYYY-MM-DD or an ISO date-time") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=tz)).astimezone(UTC)


def _wired(load: Loader, database: str | None):
    from gpubot.ledger_check import ledger_refusal
    from gpubot.wiring import wire

    settings, policy = load(database)
    refusal = ledger_refusal(settings.database_url)  # a report never creates nor migrates the ledger it reads
    if refusal:
        typer.echo(f"error: {refusal[0]}", err=True)
        raise typer.Exit(refusal[1])
    return wire(settings, policy, providers={})


def _money(amount: Decimal) -> str:
    return str(amount.quantize(CENT))


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def _cell(value: object) -> object:
    """A CSV cell a spreadsheet will not run: text starting like a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class _SafeCsv:
    """csv.writer on stdout whose every text cell is neutralised (`project`, `note`, names come from users)."""

    def __init__(self) -> None:
        self.writer = csv.writer(sys.stdout, lineterminator="\n")

    def writerow(self, row: list) -> None:
        """Write one row."""
        self.writer.writerow([_cell(value) for value in row])


def register(app: typer.Typer, load: Loader) -> None:
    """Add `report cost`, `export ledger` and `digest` to the CLI; `load` reads settings and policy."""
    report_app = typer.Typer(help="Cost reports from the ledger.", no_args_is_help=True)
    export_app = typer.Typer(help="Exports of the ledger.", no_args_is_help=True)
    app.add_typer(report_app, name="report")
    app.add_typer(export_app, name="export")
    report_app.command("cost")(_cost_command(load))
    export_app.command("ledger")(_ledger_command(load))
    app.command("digest")(_digest_command(load))


def _bounds(engine, since: str | None, until: str | None) -> tuple[datetime, datetime]:
    now = engine.now()
    try:
        start = parse_instant(since, engine.team_tz) if since else month_bounds(now, engine.team_tz)[0]
        end = parse_instant(until, engine.team_tz, end=True) if until else now
    except ValueError as exc:
        raise _fail(f"--since/--until: {exc}") from None
    if end <= start:
        raise _fail(f"--until ({end:%Y-%m-%d %H:%M} UTC) must be after --since ({start:%Y-%m-%d %H:%M} UTC)")
    return start, end


def _cost_command(load: Loader):
    def cost(since: Annotated[str | None, typer.Option(help="Start: YYYY-MM, YYYY-MM-DD or ISO (default: "
                                                             "month start)")] = None,
             until: Annotated[str | None, typer.Option(help="End, inclusive for days/months (default: now)")] = None,
             by: Annotated[str, typer.Option(help="user | project | provider | gpu")] = "user",
             format: Annotated[str, typer.Option("--format", help="table | csv | json")] = "table",
             database: Database = None) -> None:
        """Spend, GPU-hours and idle waste per group over a period, with totals (team currency)."""
        from gpubot.scheduling.money.reports import cost_report

        if by not in GROUPINGS or format not in FORMATS:
            raise _fail(f"--by must be one of {', '.join(GROUPINGS)} and --format one of {', '.join(FORMATS)}"
                        f" (got --by {by!r}, --format {format!r})")
        wired = _wired(load, database)
        start, end = _bounds(wired.engine, since, until)
        report = cost_report(wired.engine, start, end, by)
        {"table": _print_table, "csv": _print_csv, "json": _print_json}[format](report, wired.engine.currency)
    return cost


def _rows(report) -> list[tuple[str, Decimal, Decimal, Decimal, Decimal]]:
    return [(r.name, r.spend, r.gpu_hours, r.idle_gpu_hours, r.waste) for r in [*report.rows, report.total]]


def _print_table(report, currency: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from gpubot.domain.money import format_money

    table = Table(title=f"Spend by {report.by}, {report.since:%Y-%m-%d %H:%M} – {report.until:%Y-%m-%d %H:%M} UTC")
    for column in (report.by, "spend", "GPU-h", "idle GPU-h", "idle waste"):
        table.add_column(column, justify="left" if column == report.by else "right")
    rows = _rows(report)
    for i, (name, spend, gpu_h, idle_h, waste) in enumerate(rows):
        table.add_row("total" if i == len(rows) - 1 else name, format_money(spend, currency), hours(gpu_h),
                      hours(idle_h), format_money(waste, currency), end_section=i == len(rows) - 2)
    Console(width=120).print(table)


def _print_csv(report, currency: str) -> None:
    writer = _SafeCsv()
    writer.writerow([report.by, "spend", "gpu_hours", "idle_gpu_hours", "idle_waste", "currency"])
    rows = _rows(report)
    for i, (name, spend, gpu_h, idle_h, waste) in enumerate(rows):
        writer.writerow(["total" if i == len(rows) - 1 else name, _money(spend), hours(gpu_h), hours(idle_h),
                         _money(waste), currency])


def _print_json(report, currency: str) -> None:
    def row(name, spend, gpu_h, idle_h, waste) -> dict:
        return {"name": name, "spend": _money(spend), "gpu_hours": hours(gpu_h), "idle_gpu_hours": hours(idle_h),
                "idle_waste": _money(waste)}
    rows = _rows(report)
    typer.echo(json.dumps({"since": report.since.isoformat(), "until": report.until.isoformat(), "by": report.by,
                           "currency": currency, "rows": [row(*r) for r in rows[:-1]],
                           "total": row("total", *rows[-1][1:])}, indent=2))


LEDGER_COLUMNS = ["id", "booking_id", "instance_name", "owner", "project", "provider", "gpu", "count", "start",
                  "end", "seconds", "price_per_gpu_hour", "currency", "spot", "cost", "cost_team", "team_currency",
                  "note"]


def _ledger_command(load: Loader):
    def ledger(format: Annotated[str, typer.Option("--format", help="csv")] = "csv",
               since: Annotated[str | None, typer.Option(help="Only intervals ending after this")] = None,
               until: Annotated[str | None, typer.Option(help="Only intervals starting before this")] = None,
               database: Database = None) -> None:
        """Every usage interval of the ledger with its cost (as billed, and in the team currency)."""
        from gpubot.scheduling.money.ledger_costs import priced_rows

        if format != "csv":
            raise _fail(f"--format: got {format!r}, expected csv")
        wired = _wired(load, database)
        start, end = _bounds(wired.engine, since, until) if since or until else (None, None)
        with wired.db.session() as session:
            priced = priced_rows(wired.engine, session=session, since=start, until=end)
        writer = _SafeCsv()
        writer.writerow(LEDGER_COLUMNS)
        for r, item in priced:
            writer.writerow([r.id, r.booking_id, r.instance_name, r.owner, r.project or "", r.provider, r.gpu,
                             r.count, r.start.isoformat(), r.end.isoformat(), int((r.end - r.start).total_seconds()),
                             r.price_per_gpu_hour, r.currency, int(r.spot), _money(item.native_amount),
                             _money(item.amount),
                             wired.engine.currency, r.note or ""])
    return ledger


def _digest_command(load: Loader):
    def digest(date_: Annotated[str | None, typer.Option("--date", help="Day YYYY-MM-DD (default: yesterday)")] = None,
               post: Annotated[bool, typer.Option(help="Post to team.digest_channel (once per day)")] = False,
               png: Annotated[Path | None, typer.Option(help="Also write the chart to this PNG file")] = None,
               database: Database = None) -> None:
        """Print the daily digest of a day as plain text (and its chart with --png), or post it to Slack."""
        from gpubot.bot.digest import digest_plain
        from gpubot.scheduling.money.digest import build_digest, send_digest

        wired = _wired(load, database)
        engine = wired.engine
        try:
            day = date.fromisoformat(date_) if date_ else engine.now().astimezone(engine.team_tz).date() - \
                timedelta(days=1)
        except ValueError:
            raise _fail(f"--date: got {date_!r}, expected YYYY-MM-DD") from None
        if not post:
            built = build_digest(engine, day)
            typer.echo(digest_plain(built))
            _write_chart(built, png)
            return
        if not engine.policy.team.digest_channel:
            raise _fail("team.digest_channel is not set in the policy file: there is nowhere to post")
        sent = send_digest(engine, day)
        if sent:
            from gpubot.domain.notices import DigestReady
            from gpubot.scheduling.delivery import deliver_due
            from gpubot.scheduling.money.digest import chart_of

            digest = DigestReady(channel=engine.policy.team.digest_channel, period=day.isoformat())
            for key in (digest.key, chart_of(digest).key):  # this process delivers its digest and chart now
                while deliver_due(engine, wired.channels(), key=key):
                    pass
        where = f"posted to {engine.policy.team.digest_channel}" if sent else "was already posted"
        typer.echo(f"digest of {day} {where}")
    return digest


def _write_chart(built, png: Path | None) -> None:
    """Write the digest's chart to `png`, saying where (or why not)."""
    from gpubot.scheduling.money.digest import digest_chart

    if png is None:
        return
    if built.quiet:  # docs/money.md: a day with no activity is one line, without a chart
        typer.echo(f"no chart written to {png}: no activity that day", err=True)
        return
    chart = digest_chart(built)
    if chart is None:
        raise _fail("--png needs matplotlib: pip install '.[charts]' (in gpubot's checkout)")
    try:
        png.write_bytes(chart)
    except OSError as exc:
        raise _fail(f"--png: cannot write {png}: {exc.strerror}") from None
    typer.echo(f"\nchart written to {png}")
