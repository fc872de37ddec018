"""Every Prometheus metric gpubot exports, declared in this one module (names: gpubot_<thing>_<unit>).

Counters and histograms are recorded where things happen; gauges that describe the ledger (queue depth,
active and booting bookings, spend, GPU telemetry, availability) are read from the database at scrape time by
`LedgerCollector`, so every replica reports the same truth.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = [
    "ACQUISITION_ATTEMPTS",
    "ACQUISITION_SECONDS",
    "ALERTS",
    "ALERTS_FOLDED",
    "BOOT_POLLS",
    "BOOT_SECONDS",
    "BREAKER_OPEN",
    "GPUS_AVAILABLE",
    "JOB_RUNS",
    "LEDGER_DISK_FREE",
    "LEDGER_DISK_LOW",
    "METRIC_NAMES",
    "PREEMPTIONS",
    "PROVIDER_ERRORS",
    "PROVIDER_UP",
    "REGISTRY",
    "SCHEDULER_LEADER",
    "SLACK_ACK_SECONDS",
    "SLACK_AUTH_OK",
    "SPEND",
    "SPOT_FALLBACKS",
    "UP",
]

REGISTRY = CollectorRegistry()

SLACK_ACK_SECONDS = Histogram(
    "gpubot_slack_ack_seconds", "Time from receiving a Slack request to its acknowledgement", ["kind"],
    registry=REGISTRY, buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5))
ACQUISITION_SECONDS = Histogram(
    "gpubot_acquisition_seconds", "Time from the start of an acquisition round to a placed booking",
    registry=REGISTRY, buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900))
ACQUISITION_ATTEMPTS = Counter(
    "gpubot_acquisition_attempts", "Launch attempts by provider and outcome", ["provider", "outcome"],
    registry=REGISTRY)
PROVIDER_ERRORS = Counter(
    "gpubot_provider_errors", "Errors returned by providers, by kind", ["provider", "kind"], registry=REGISTRY)
ALERTS = Counter("gpubot_alerts", "On-call alerts raised, by kind", ["kind"], registry=REGISTRY)
ALERTS_FOLDED = Counter("gpubot_alerts_folded", "Alert crossings folded into an open alert instead of paging (the "
                        "hourly page cap was spent), by kind", ["kind"], registry=REGISTRY)
PREEMPTIONS = Counter("gpubot_preemptions", "Running machines their provider took back (spot interruptions)",
                      ["provider"], registry=REGISTRY)
SPOT_FALLBACKS = Counter("gpubot_spot_fallbacks", "Spot bookings that found no spot capacity for [spot] "
                         "fallback_after and launched on demand", ["provider"], registry=REGISTRY)
BOOT_SECONDS = Histogram(
    "gpubot_boot_seconds", "Time from a launch to the machine being reachable (0: ready at launch), by provider",
    ["provider"], registry=REGISTRY, buckets=(1, 10, 30, 60, 90, 120, 180, 300, 600, 900, 1800))
BOOT_POLLS = Histogram(
    "gpubot_boot_polls", "Describe calls it took until a launched machine was reachable, by provider", ["provider"],
    registry=REGISTRY, buckets=(0, 1, 2, 3, 5, 8, 13, 21, 34))

# Names as they appear on /metrics (counters get _total); the deploy tests check dashboards against these.
METRIC_NAMES = {
    "gpubot_slack_ack_seconds", "gpubot_acquisition_seconds", "gpubot_acquisition_attempts_total",
    "gpubot_provider_errors_total", "gpubot_alerts_total", "gpubot_gpus_available", "gpubot_queue_depth",
    "gpubot_bookings_active", "gpubot_spend_total", "gpubot_gpu_utilization_percent",
    "gpubot_gpu_temperature_celsius", "gpubot_scheduler_leader", "gpubot_up", "gpubot_provider_breaker_open",
    "gpubot_preemptions_total", "gpubot_boot_seconds", "gpubot_boot_polls", "gpubot_bookings_booting",
    "gpubot_job_runs_total", "gpubot_provider_up", "gpubot_alerts_folded_total", "gpubot_slack_auth_ok",
    "gpubot_ledger_disk_free_bytes", "gpubot_ledger_disk_low", "gpubot_spot_fallbacks_total",
}

JOB_RUNS = Counter("gpubot_job_runs", "Scheduled job runs on the leader, by job and outcome (ok, failed)",
                   ["job", "outcome"], registry=REGISTRY)
SCHEDULER_LEADER = Gauge("gpubot_scheduler_leader", "1 when this replica runs the scheduled jobs",
                         registry=REGISTRY)
UP = Gauge("gpubot_up", "1 while gpubot serves", registry=REGISTRY)
LEDGER_DISK_FREE = Gauge("gpubot_ledger_disk_free_bytes", "Free bytes on a SQLite ledger's disk (telemetry is "
                         "refused below retention.min_free_disk_mb)", registry=REGISTRY)
LEDGER_DISK_LOW = Gauge("gpubot_ledger_disk_low", "1 while a SQLite ledger's disk has less free than "
                        "retention.min_free_disk_mb (telemetry refused, /readyz not ready), else 0", registry=REGISTRY)
SLACK_AUTH_OK = Gauge("gpubot_slack_auth_ok", "0 while Slack refuses the bot token (revoked, invalid), else 1",
                      registry=REGISTRY)
GPUS_AVAILABLE = Gauge("gpubot_gpus_available", "GPUs a provider offered as free at the last probe",
                       ["provider", "gpu"], registry=REGISTRY)
SPEND = Counter("gpubot_spend", "Spend billed into the ledger by this replica, team currency", ["currency"],
                registry=REGISTRY)
PROVIDER_UP = Gauge("gpubot_provider_up", "1 when the provider's last call from this replica reached it, 0 when it "
                    "failed (bad credentials, unreachable, 5xx)", ["provider"], registry=REGISTRY)
BREAKER_OPEN = Gauge("gpubot_provider_breaker_open", "1 while a provider's circuit breaker is open on this replica",
                     ["provider"], registry=REGISTRY)
