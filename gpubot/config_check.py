"""`gpubot check-config`: every problem of the policy file and the environment at once, each naming the key or
variable to fix; `--online` adds one cheap authenticated call to each service (providers, Slack, the database, the
public URL). Secrets are judged, never printed."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Late
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from gpubot.domain.policy import Policy
from gpubot.providers.registry import kind_named
from gpubot.settings import Settings

__all__ = ["Problem", "offline_checks", "online_checks", "public_url_warning", "without_password"]

SIGNING_SECRET = re.compile(r"[0-9a-f]{32}")
ROUTING_KEY = re.compile(r"[A-Za-z0-9]{32}")
ONLINE_TIMEOUT = 20.0  # seconds one provider's listing may take before it counts as unreachable


@dataclass(frozen=True)
class Problem:
    """One thing to fix: the key or variable, what is wrong, and whether it would stop a booking."""

    key: str
    text: str
    blocking: bool = True

    def line(self) -> str:
        """How check-config prints it."""
        return f"{'error' if self.blocking else 'warning'}: {self.key}: {self.text}"


def _value(secret: SecretStr | None) -> str:
    return secret.get_secret_value() if secret is not None else ""


def without_password(url: str) -> str:
    """A database URL safe to print: credentials dropped."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('@', 1)[-1]}" if "@" in rest else url


def public_url_warning(url: str, rented: bool) -> str:
    """Why rented machines could not fetch the agent from `url` safely, or ''."""
    if not rented:
        return ""
    parts = urlsplit(url)
    if parts.hostname in (None, "localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return ("rented machines download the agent from it and push to it, and cannot reach this address; set "
                "GPUBOT_PUBLIC_URL")
    if parts.scheme != "https":
        return "not HTTPS; the agent and its token travel over it"
    return ""


def _token_kind(token: str) -> str | None:
    """What is wrong with a bot token's kind, or None for a bot token."""
    if token.startswith("xoxb-"):
        return None
    if token.startswith("xapp-"):
        return ("an app-level token (xapp-…) where the bot token (xoxb-…) belongs; an xapp- token goes in "
                "SLACK_APP_TOKEN, and only for Socket Mode")
    if token.startswith("xoxp-"):
        return "a user token (xoxp-…) where the bot token (xoxb-…, OAuth & Permissions → Bot User OAuth Token) belongs"
    return "not a Slack bot token (they start xoxb-: OAuth & Permissions → Bot User OAuth Token)"


def slack_problems(settings: Settings) -> list[Problem]:
    """The Slack settings' presence and shape: a bot token of the bot kind, an app token only as one, a signing
    secret shaped like Slack's (32 hexadecimal characters)."""
    problems = []
    token = _value(settings.slack_bot_token)
    if not token:
        problems.append(Problem("SLACK_BOT_TOKEN", "not set (the Bot User OAuth Token, xoxb-…)"))
    elif wrong := _token_kind(token):
        problems.append(Problem("SLACK_BOT_TOKEN", wrong))
    app_token = _value(settings.slack_app_token)
    if app_token and not app_token.startswith("xapp-"):
        problems.append(Problem("SLACK_APP_TOKEN", "not an app-level token (they start xapp-, with the "
                                "connections:write scope); leave it unset for HTTP mode"))
    secret = _value(settings.slack_signing_secret)
    if not settings.socket_mode:
        if not secret:
            problems.append(Problem("SLACK_SIGNING_SECRET", "not set (HTTP mode: every request is verified with it)"))
        elif not SIGNING_SECRET.fullmatch(secret):
            problems.append(Problem("SLACK_SIGNING_SECRET", f"{len(secret)} characters, but Slack's signing secrets "
                                    "are 32 hexadecimal characters (Basic Information → App Credentials): every "
                                    "request would be refused"))
    return problems


def offline_checks(settings: Settings, policy: Policy | None, online: bool = False) -> tuple[list[str], list[Problem]]:
    """What the settings and the (valid) policy say without calling anything: lines to print and problems (`online`:
    the provider calls follow, so a configured provider's line does not send the reader to --online)."""
    from gpubot.wiring import provider_status

    slack_mode = "socket mode" if settings.socket_mode else "HTTP mode"
    lines = [f"database: {without_password(settings.database_url)}",
             f"slack: {slack_mode}, bot token {'set' if settings.slack_bot_token else 'MISSING'}, "
             f"signing secret {'set' if settings.slack_signing_secret else 'MISSING'}"]
    problems = slack_problems(settings)
    routing_key = _value(settings.pagerduty_routing_key)
    if routing_key and not ROUTING_KEY.fullmatch(routing_key):
        problems.append(Problem("PAGERDUTY_ROUTING_KEY", f"{len(routing_key)} characters, but an Events API v2 "
                                "integration key is 32 letters and digits: no alert would reach on-call", False))
    if policy is None:
        return lines, problems
    status = provider_status(policy, settings)
    lines += [f"provider {name} ({policy.providers[name].kind}): {_offline_state(state, online)}"
              for name, state in status.items()]
    if not any(state.startswith(("usable", "configured")) for state in status.values()):
        problems.append(Problem("providers", "no usable provider: nothing could be booked"))
    rented = any(getattr(kind_named(p.kind), "rented", False) for p in policy.enabled_providers().values())
    warning = public_url_warning(settings.gpubot_public_url, rented)
    lines.append(f"public URL: {settings.gpubot_public_url}{' — WARNING: ' + warning if warning else ''}")
    return lines, problems


def _offline_state(state: str, online: bool) -> str:
    """A configured cloud's state says its credentials were not tried (unless --online tries them below)."""
    if state != "configured" or online:
        return state
    return "configured — credentials not tried (check-config --online calls it)"


def _secret_names(kind: str) -> list[str]:
    entry = kind_named(kind)
    fields = entry.settings.model_fields.items() if entry and entry.settings else []
    return [name.upper() for name, info in fields if "SecretStr" in str(info.annotation)]


def _provider_call(name: str, kind: str, provider) -> tuple[str, Problem | None]:
    """One listing call through the adapter's own client and error mapping: a line, and a problem if it failed."""
    from gpubot.domain.errors import AuthFailed, ProviderError, Transient
    from gpubot.startup import one_line

    secrets = " or ".join(_secret_names(kind)) or f"providers.{name}"
    try:
        owned = provider.list_owned()
    except AuthFailed as exc:
        return (f"provider {name} ({kind}): credentials refused",
                Problem(secrets, f"provider {name} refused the credentials: {exc.detail or exc}"))
    except Transient as exc:
        return (f"provider {name} ({kind}): unreachable",
                Problem(f"providers.{name}", f"cannot reach it: {exc.detail or exc}"))
    except ProviderError as exc:
        return (f"provider {name} ({kind}): call failed",
                Problem(f"providers.{name}", f"listing its machines failed: {exc}"))
    except Exception as exc:  # unreachable, unexpected answer: one line
        return (f"provider {name} ({kind}): unreachable",
                Problem(f"providers.{name}", f"cannot reach it: {one_line(exc)}"))
    return f"provider {name} ({kind}): reached, {len(owned)} gpubot machine(s) running", None


_TEAM_OWNED_LINE = ("nothing to call — the team's own machines, as the config lists them; who holds their GPUs is "
                   "read from the ledger")


def provider_checks(policy: Policy, settings: Settings) -> tuple[list[str], list[Problem]]:
    """Each usable provider's listing call, all at once, each within ONLINE_TIMEOUT. The team's own machines (the
    pool) have no API: their line says so, and nothing is called (their holders are in the ledger, which
    `database_check` reads)."""
    from gpubot.wiring import build_providers

    built, _unusable = build_providers(policy, settings)
    owned = {name for name in built if getattr(kind_named(policy.providers[name].kind), "team_owned", False)}
    usable = {name: adapter for name, adapter in built.items() if name not in owned}
    lines = [f"provider {name} ({policy.providers[name].kind}): {_TEAM_OWNED_LINE}" for name in sorted(owned)]
    problems: list[Problem] = []
    pool = ThreadPoolExecutor(max_workers=max(1, len(usable)))
    futures = {name: pool.submit(_provider_call, name, policy.providers[name].kind, p) for name, p in usable.items()}
    for name, future in futures.items():
        try:
            line, problem = future.result(timeout=ONLINE_TIMEOUT)
        except Late:
            line, problem = (f"provider {name}: no answer", Problem(f"providers.{name}", "no answer within "
                                                                    f"{ONLINE_TIMEOUT:.0f} s"))
        lines.append(line)
        problems += [problem] if problem else []
    pool.shutdown(wait=False, cancel_futures=True)
    if usable and len(problems) == len(usable) and not owned:
        problems.append(Problem("providers", "no provider answered: nothing could be booked"))
    return lines, problems


SLACK_ERRORS = {
    "invalid_auth": "Slack refused it (invalid_auth: revoked, mistyped, or from another workspace)",
    "not_authed": "Slack received no token",
    "account_inactive": "Slack refused it (account_inactive: the app was uninstalled or its user deactivated)",
    "token_revoked": "Slack refused it (token_revoked: reinstall the app and copy the new token)",
    "not_allowed_token_type": "Slack refused its kind (not_allowed_token_type): the Bot User OAuth Token (xoxb-…) "
                              "belongs here",
}


def slack_check(settings: Settings) -> tuple[str, Problem | None]:
    """Slack's auth.test with the bot token: who the bot is, or why Slack refused it."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    token = _value(settings.slack_bot_token)
    if not token:
        return "slack auth.test: skipped (no SLACK_BOT_TOKEN)", None
    try:
        answer = WebClient(token=token, base_url=settings.slack_api_url, timeout=10).auth_test()
    except SlackApiError as exc:
        error = str(exc.response.get("error", "unknown"))
        return (f"slack auth.test: refused ({error})",
                Problem("SLACK_BOT_TOKEN", SLACK_ERRORS.get(error, f"Slack refused it ({error})")))
    except Exception as exc:  # no answer at all
        from gpubot.startup import one_line

        return ("slack auth.test: no answer", Problem("SLACK_API_URL", f"{settings.slack_api_url} cannot be "
                                                      f"reached: {one_line(exc)}"))
    return f"slack auth.test: ok — bot {answer.get('user_id')} in workspace {answer.get('team')}", None


def database_check(settings: Settings) -> tuple[str, Problem | None]:
    """The database reached and read (never created): its migration and how many behind."""
    from gpubot.ledger_check import schema_state

    state = schema_state(settings.database_url)
    if state.fault:
        return f"database: {state.problem}", Problem("DATABASE_URL", state.problem or "")
    if state.problem:
        return f"database: {state.problem} — `gpubot serve` creates the schema at start", None
    if state.unknown:
        return (f"database: at migration {state.revision}, unknown to this gpubot",
                Problem("DATABASE_URL", f"at migration {state.revision}, which a newer gpubot made: upgrade gpubot"))
    if state.behind:
        return (f"database: at migration {state.revision}, {state.behind} behind the newest — `gpubot serve` "
                "migrates it at start (back it up first: docs/upgrading.md)", None)
    return f"database: reached, at migration {state.revision} (the newest)", None


def public_url_check(settings: Settings, rented: bool) -> tuple[str, Problem | None]:
    """Whether GPUBOT_PUBLIC_URL serves this gpubot's agent (byte for byte, by its SHA-256)."""
    from gpubot.agent_file import load_agent_file
    from gpubot.scheduling.agent import AGENT_PATH

    url = settings.gpubot_public_url.rstrip("/") + AGENT_PATH
    try:
        response = httpx.get(url, timeout=5.0, follow_redirects=True)
    except httpx.HTTPError as exc:
        text = f"{url} cannot be reached from here ({type(exc).__name__})"
    else:
        served = response.headers.get("X-Content-SHA256")
        if response.status_code == 200 and served == load_agent_file().sha256:
            return f"public URL: serves this gpubot's agent at {url}", None
        text = (f"{url} answered HTTP {response.status_code}" if response.status_code != 200
                else f"{url} serves another agent than this gpubot's (another version, or another service)")
    return f"public URL: {text}", Problem("GPUBOT_PUBLIC_URL", text + ": rented machines would run without "
                                          "telemetry", blocking=False) if rented else None


def online_checks(settings: Settings, policy: Policy | None) -> tuple[list[str], list[Problem]]:
    """One cheap authenticated call to each service the bot needs: lines to print and problems."""
    lines: list[str] = []
    problems: list[Problem] = []
    checks: list[Callable[[], tuple[str, Problem | None]]] = [lambda: slack_check(settings),
                                                               lambda: database_check(settings)]
    if policy is not None:
        rented = any(getattr(kind_named(p.kind), "rented", False) for p in policy.enabled_providers().values())
        checks.append(lambda: public_url_check(settings, rented))
    for check in checks:
        line, problem = check()
        lines.append(line)
        problems += [problem] if problem else []
    if policy is not None:
        provider_lines, provider_problems = provider_checks(policy, settings)
        lines += provider_lines
        problems += provider_problems
    return lines, problems
