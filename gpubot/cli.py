"""The `gpubot` command line."""

from __future__ import annotations

from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from gpubot.cli_options import DEMO_DATABASE, Database, database_url
from gpubot.config import load_policy
from gpubot.domain.errors import ConfigError
from gpubot.logs import setup_logging
from gpubot.providers.registry import kind_named
from gpubot.replay_cli import register as register_replay
from gpubot.reports_cli import register as register_reports
from gpubot.settings import Settings

__all__ = ["app", "main"]

class _Commands(TyperGroup):
    """gpubot's command group: a config problem raised by any command below is one line and exit 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            typer.echo(f"error: config {exc}", err=True)
            raise typer.Exit(2) from None


app = typer.Typer(cls=_Commands, help="gpubot: book cloud GPUs from Slack.", no_args_is_help=True,
                  add_completion=False)
db_app = typer.Typer(help="Database commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")


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
                 database: Database = None) -> None:
    """Validate the policy file and environment; say which providers are usable and why not."""
    from gpubot.wiring import provider_status

    settings = _settings(database)
    policy, source = _policy(config or settings.gpubot_config, "--config" if config else _config_source(settings))
    typer.echo(f"policy: {source} — valid")
    typer.echo(f"database: {_without_password(settings.database_url)}")
    typer.echo(f"slack: {'socket mode' if settings.socket_mode else 'HTTP mode'}, "
               f"bot token {'set' if settings.slack_bot_token else 'MISSING'}, "
               f"signing secret {'set' if settings.slack_signing_secret else 'MISSING'}")
    status = provider_status(policy, settings)
    for name, state in status.items():
        typer.echo(f"provider {name} ({policy.providers[name].kind}): {state}")
    rented = any(getattr(kind_named(p.kind), "rented", False) for p in policy.enabled_providers().values())
    typer.echo(f"public URL: {settings.gpubot_public_url}{_public_url_warning(settings.gpubot_public_url, rented)}")
    if not any(s.startswith("usable") for s in status.values()):
        raise _fail("no usable provider: nothing could be booked", 1)


def _public_url_warning(url: str, rented: bool) -> str:
    """Why rented machines could not fetch the agent from `url` safely, or ''."""
    if not rented:
        return ""
    parts = urlsplit(url)
    if parts.hostname in (None, "localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return (" — WARNING: rented machines download the agent from it and push to it, and cannot reach this "
                "address; set GPUBOT_PUBLIC_URL")
    if parts.scheme != "https":
        return " — WARNING: not HTTPS; the agent and its token travel over it"
    return ""


def _without_password(url: str) -> str:
    """A database URL safe to print: credentials dropped."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('@', 1)[-1]}" if "@" in rest else url


@db_app.command("upgrade")
def db_upgrade(database: Database = None) -> None:
    """Bring the database (--database, else DATABASE_URL) to the newest schema."""
    from gpubot.db.engine import upgrade

    settings = _settings(database)
    upgrade(settings.database_url)
    typer.echo("database is at head")


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
    policy, source = _policy(settings.gpubot_config, _config_source(settings))
    setup_logging(settings.log_level, settings.log_format, settings.secrets())
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
