"""Wiring: the one place that picks real adapters and builds the engine, the notifier and the Bolt app."""

from __future__ import annotations

from dataclasses import dataclass

from slack_bolt import App
from slack_sdk import WebClient

from gpubot.agent_file import AgentFile, load_agent_file
from gpubot.bot.app import build_app, new_app, outbox_client
from gpubot.bot.context import BotContext
from gpubot.bot.notifier import SlackNotifier
from gpubot.db.database import Database
from gpubot.db.people import LedgerLanguages
from gpubot.domain.booking_view import BookingView
from gpubot.domain.notices import Notice, ProviderAlert
from gpubot.domain.policy import Policy
from gpubot.domain.ports import Delivery, MachineStore, NoticeChannel, Pacer, Pager, Provider
from gpubot.machines import DatabaseMachines
from gpubot.pagerduty import PagerDuty
from gpubot.providers.prometheus import PrometheusTelemetry
from gpubot.providers.registry import BuildContext, GpuSlots, build_provider, kind_named
from gpubot.scheduling.acquisition.pacing import SharedPacer
from gpubot.scheduling.acquisition.pool import host_of, ledger_slots
from gpubot.scheduling.engine import Engine, utc_now
from gpubot.scheduling.lifecycle.telemetry import TelemetrySource
from gpubot.settings import Settings

__all__ = ["Wired", "build_providers", "ledger_slots", "provider_status", "telemetry_sources", "wire"]


@dataclass
class Wired:
    """Everything a running gpubot is made of."""

    settings: Settings
    policy: Policy
    db: Database
    engine: Engine
    client: WebClient
    notifier: SlackNotifier
    ctx: BotContext
    app: App
    agent: AgentFile  # served at AGENT_PATH; the engine writes its hash into every start command

    def channels(self) -> dict[str, NoticeChannel]:
        """The outbox's delivery channels: Slack, and PagerDuty when one is configured."""
        pager = self.engine.pager
        return {"slack": self.notifier, **({"pagerduty": PagerChannel(pager)} if pager is not None else {})}


@dataclass(frozen=True)
class PagerChannel:
    """PagerDuty as a channel of the outbox: an on-call notice becomes a trigger (or resolve) event."""

    pager: Pager

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        """Page on-call with the alert (its dedup_key makes a resend in doubt harmless); other notices are not
        PagerDuty's."""
        if not isinstance(notice, ProviderAlert):
            return Delivery("refused", error="not an alert")
        outcome = self.pager.page(notice.kind, notice.alert_key, notice.summary, notice.severity, notice.resolve)
        return Delivery({"accepted": "accepted", "rejected": "refused"}.get(outcome, "retry"), error=outcome)


def _secret(value) -> str | None:
    return value.get_secret_value() if value is not None else None


def build_providers(policy: Policy, settings: Settings, slots: GpuSlots | None = None,
                    machines: MachineStore | None = None, pacer: Pacer | None = None
                    ) -> tuple[dict[str, Provider], dict[str, str]]:
    """Usable adapters by name, each built by its kind (providers.registry), and why each other enabled provider is
    not usable (`slots`: who holds the team pool's GPUs, from the ledger — None where nothing reads them, as in
    check-config; `machines`: where in-process clouds keep their machines, None for in memory; `pacer`: what spaces
    the calls of rate-limited vendors — the running bot passes the one in the database)."""
    context = BuildContext(read_settings=settings.read, pacer=pacer, machines=machines, slots=slots)
    usable, unusable = {}, {}
    for name, config in policy.enabled_providers().items():
        try:
            usable[name] = build_provider(name, config, context)
        except LookupError as exc:
            unusable[name] = str(exc)
    return usable, unusable


def _checked(kind: str, adapter: Provider) -> str:
    """"usable", with what the kind's own check found (providers.registry `check`), or why not; "configured" for a
    kind that reads credentials and has no local check (whether they work is known only by calling it)."""
    entry = kind_named(kind)
    check = getattr(entry, "check", None)
    if check is None:
        return "configured" if getattr(entry, "settings", None) else "usable"
    try:
        return f"usable — {check(adapter)}"
    except LookupError as exc:
        return f"not usable: {exc}"


def provider_status(policy: Policy, settings: Settings) -> dict[str, str]:
    """For check-config: each configured provider, what was checked without calling it, and why it cannot be used."""
    usable, unusable = build_providers(policy, settings)
    status = {name: _checked(policy.providers[name].kind, adapter) for name, adapter in usable.items()}
    status.update({name: f"not usable: {why}" for name, why in unusable.items()})
    status.update({name: "disabled" for name, p in policy.providers.items() if not p.enabled})
    return status


def _pager(settings: Settings) -> PagerDuty | None:
    key = _secret(settings.pagerduty_routing_key)
    return PagerDuty(key, settings.pagerduty_events_url) if key else None


def telemetry_sources(settings: Settings) -> list[TelemetrySource]:
    """Extra telemetry sources: Prometheus (DCGM exporter series) when PROMETHEUS_URL is set."""
    if not settings.prometheus_url:
        return []
    prometheus = PrometheusTelemetry(settings.prometheus_url)
    return [lambda booking: prometheus.readings(host_of(booking))]


def wire(settings: Settings, policy: Policy, *, clock=utc_now, providers: dict[str, Provider] | None = None,
         keep_simulated: bool = False) -> Wired:
    """Build the whole bot from settings and policy (`providers` replaces the configured ones in tests;
    `keep_simulated` keeps the simulated clouds' machines in the database, so they outlive a restart)."""
    db = Database(settings.database_url)
    machines = DatabaseMachines(db) if keep_simulated else None
    bolt = new_app(_secret(settings.slack_bot_token) or "xoxb-unset", settings.slack_api_url,
                   _secret(settings.slack_signing_secret) or "")
    client = bolt.client
    agent = load_agent_file()
    if providers is None:  # the team pool's GPUs are lent through the ledger's slot claims
        providers = build_providers(policy, settings, ledger_slots(db, clock), machines, SharedPacer(db))[0]
    engine = Engine(db=db, policy=policy, providers=providers, clock=clock,
                    public_url=settings.gpubot_public_url, agent_sha256=agent.sha256, pager=_pager(settings))
    ctx = BotContext(engine=engine, client=client, languages=LedgerLanguages(db))
    notifier = SlackNotifier(client, policy, sender=outbox_client(client), reader=ctx.reads)
    app = build_app(bolt, ctx)
    return Wired(settings, policy, db, engine, client, notifier, ctx, app, agent)
