"""The `gpubot` command line."""

from __future__ import annotations

import logging
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated

import httpx
import typer
from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError
from typer.core import TyperGroup

from gpubot.cli_options import DEMO_DATABASE, Database, database_url
from gpubot.config import load_policy
from gpubot.domain.errors import ConfigError
from gpubot.logs import setup_logging
from gpubot.replay_cli import register as register_replay
from gpubot.reports_cli import register as register_reports
from gpubot.settings import Settings

__all__ = ["app", "main"]

class _Commands(TyperGroup):
    """gpubot's command group: a config problem raised by any command below is one line and exit 2; a database or
    network fault one line and exit 1 (`--debug`: the traceback instead)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            typer.echo(f"error: config {exc}", err=True)
            raise typer.Exit(2) from None
        except (SQLAlchemyError, OSError, httpx.TransportError) as exc:
            if ctx.params.get("debug"):
                raise
            from gpubot.startup import one_line

            where = "database" if isinstance(exc, SQLAlchemyError) else "network or file"
            typer.echo(f"error: {where}: {one_line(exc)} (--debug shows the traceback)", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(cls=_Commands, help="gpubot: book cloud GPUs from Slack.", no_args_is_help=True,
                  add_completion=False)
db_app = typer.Typer(help="Database commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of a database or network "
                                              "fault instead of its one line")] = False) -> None:
    """gpubot: book cloud GPUs from Slack."""


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _settings(database: str | None = None) -> Settings:
    overrides = {"database_url": database_url(database)} if database else {}
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _fail(f"environment variable {str(first['loc'][0]).upper()}: {first['msg']}") from None


def _policy(path: str | None, given_by: str | None = None):
    """The policy at `path`; `given_by` names where an explicit path came from (then a missing file is an error)."""
    if path and given_by and not Path(path).is_file():
        raise _fail(f"config file {path} (from {given_by}) does not exist")
    try:
        return load_policy(path)
    except ConfigError as exc:
        raise _fail(f"config {exc}") from None


def _config_source(settings: Settings) -> str | None:
    """'GPUBOT_CONFIG' when the environment (or .env) names the policy file, None when it is the default."""
    return "GPUBOT_CONFIG" if "gpubot_config" in settings.model_fields_set else None


@app.command()
def version() -> None:
    """Print the gpubot version."""
    typer.echo(package_version("gpubot"))


@app.command("check-config")
def check_config(config: Annotated[str | None, typer.Option(help="Policy file (default GPUBOT_CONFIG)")] = None,
                 database: Database = None,
                 online: Annotated[bool, typer.Option("--online", help="Also call each provider, Slack (auth.test), "
                                                      "the database and the public URL")] = False) -> None:
    """Validate the policy file and environment, every problem at once; exit 1 if any would stop a booking."""
    from gpubot.config import policy_problems_in
    from gpubot.config_check import offline_checks, online_checks

    settings = _settings(database)
    path = config or settings.gpubot_config
    given_by = "--config" if config else _config_source(settings)
    if given_by and not Path(path).is_file():
        raise _fail(f"config file {path} (from {given_by}) does not exist")
    policy_errors = policy_problems_in(path) if Path(path).is_file() else []
    policy = None if policy_errors else _policy(path)[0]
    source = path if Path(path).is_file() else "built-in defaults"
    typer.echo(f"policy: {source} — " + (f"{len(policy_errors)} problem{'s' if len(policy_errors) > 1 else ''}"
                                         if policy_errors else "valid"))
    lines, problems = offline_checks(settings, policy, online)
    if online:
        more_lines, more = online_checks(settings, policy)
        lines, problems = lines + more_lines, problems + more
    for line in lines:
        typer.echo(line)
    for error in policy_errors:
        typer.echo(f"error: config {error}", err=True)
    for problem in problems:
        typer.echo(problem.line(), err=True)
    if policy_errors:
        raise typer.Exit(2)
    if any(problem.blocking for problem in problems):
        raise typer.Exit(1)


@db_app.command("upgrade")
def db_upgrade(database: Database = None) -> None:
    """Bring the database (--database, else DATABASE_URL) to the newest schema."""
    from gpubot.db.database import upgrade

    settings = _settings(database)
    upgrade(settings.database_url)
    typer.echo("database is at head")


@db_app.command("current")
def db_current(database: Database = None) -> None:
    """Say which migration the database (--database, else DATABASE_URL) is at, and how many behind; creates nothing."""
    from gpubot.ledger_check import POINT_AT_LEDGER, schema_state

    state = schema_state(_settings(database).database_url)
    if state.problem:
        raise _fail(state.problem if state.fault else f"{state.problem}; {POINT_AT_LEDGER}", 1 if state.fault else 2)
    if state.unknown:
        raise _fail(f"{state.url} is at migration {state.revision}, which this gpubot does not know (a newer "
                    "gpubot migrated it)", 1)
    where = f"{state.behind} behind the newest: run `gpubot db upgrade`" if state.behind else "the newest"
    typer.echo(f"{state.url} is at migration {state.revision} ({where})")


@app.command()
def serve(host: Annotated[str | None, typer.Option(help="Bind address (default GPUBOT_HOST)")] = None,
          port: Annotated[int | None, typer.Option(help="Port (default GPUBOT_PORT)")] = None,
          database: Database = None) -> None:
    """Run the bot: Slack over HTTP (or Socket Mode with SLACK_APP_TOKEN), /livez, /readyz, /metrics."""
    from gpubot.startup import bind, missing_secrets

    settings = _settings(database)
    address = (host or settings.gpubot_host, port or settings.gpubot_port)
    listening = bind(*address)  # a busy port is the first and only thing said
    if listening is None:
        raise _fail(f"cannot listen on {address[0]}:{address[1]}: the port is in use or not allowed", 1)
    sockets = [listening]
    if settings.metrics_port:
        sockets.append(bind(address[0], settings.metrics_port))
        if sockets[-1] is None:
            raise _fail(f"cannot listen on {address[0]}:{settings.metrics_port} (METRICS_PORT): the port is in use "
                        "or not allowed", 1)
    missing = missing_secrets(settings)
    if missing:
        raise _fail(f"missing required settings: {', '.join(missing)}")
    from gpubot.config_check import slack_problems

    shapes = slack_problems(settings)  # never the values: only their kind and shape
    wrong_kind = [p for p in shapes if p.key in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")]
    if wrong_kind:
        raise _fail("; ".join(f"{p.key}: {p.text}" for p in wrong_kind))
    policy, source = _policy(settings.gpubot_config, _config_source(settings))
    setup_logging(settings.log_level, settings.log_format, settings.secrets())
    for problem in shapes:
        if problem not in wrong_kind:
            logging.getLogger("gpubot.serve").warning("%s: %s (gpubot check-config --online checks it)", problem.key,
                                                      problem.text)
    _run(settings, policy, source, sockets)


def _run(settings: Settings, policy, source: str, sockets: list) -> None:
    from gpubot.serving import StartupFailed, serve
    from gpubot.startup import database_problem

    problem = database_problem(settings.database_url)
    if problem:
        raise _fail(problem, 1)
    try:
        serve(settings, policy, source, sockets)
    except StartupFailed as exc:
        raise _fail(f"start-up failed: {exc}", 1) from None


@app.command()
def demo(config: Annotated[str | None, typer.Option(help="Policy file (default: built-in simulated cloud)")] = None,
         database: Annotated[str, typer.Option(metavar="URL", help="Database URL or SQLite file of the demo (its "
                                               "own, never DATABASE_URL; kept between runs)")] = DEMO_DATABASE,
         web: Annotated[bool, typer.Option("--web", help="Serve a Slack-like page on 127.0.0.1 instead")] = False,
         port: Annotated[int, typer.Option(help="Port of the --web page", min=1, max=65535)] = 8080) -> None:
    """Try gpubot in the terminal (or a browser, --web): the simulated cloud, a local ledger, no Slack."""
    from gpubot.demo import DemoBusy, run_demo

    policy, _source = _policy(config)
    try:
        run_demo(policy, database_url(database) or DEMO_DATABASE, web=web, port=port)
    except DemoBusy as exc:
        raise _fail(str(exc), 1) from None


@app.command()
def agent(url: Annotated[str, typer.Option(help="gpubot's public URL")],
          token_file: Annotated[str | None, typer.Option(help="File holding the booking's agent token")] = None,
          token: Annotated[str | None, typer.Option(
              help="The agent token itself (visible in the process list: prefer --token-file or "
                   "GPUBOT_AGENT_TOKEN)")] = None,
          interval: Annotated[str, typer.Option(help="Push interval, e.g. 15s")] = "15s") -> None:
    """Run on the GPU machine: push GPU utilisation and temperature to gpubot (the served agent's own code)."""
    from gpubot.agent import main as agent_main
    from gpubot.domain.durations import parse_duration

    try:
        seconds = parse_duration(interval).total_seconds()
    except ValueError as exc:
        raise _fail(str(exc)) from None
    argv = ["--url", url, "--interval", str(seconds)]
    argv += ["--token-file", token_file] if token_file else []
    raise typer.Exit(agent_main(argv + (["--token", token] if token else [])))


def _settings_and_policy(database: str | None = None):
    settings = _settings(database)
    return settings, _policy(settings.gpubot_config)[0]


register_reports(app, _settings_and_policy)
register_replay(app)


def main() -> None:
    """Entry point of the console script."""
    app()
