"""Every metric the Grafana dashboard and the alert rules use is one gpubot exports (scheduling.metrics)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from gpubot.scheduling.metrics import METRIC_NAMES

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
_NAME = re.compile(r"\bgpubot_\w+")
_SERIES_SUFFIXES = ("_bucket", "_sum", "_count")


def names_in(expr: str) -> set[str]:
    """Metric names a PromQL expression reads, with histogram series suffixes stripped."""
    found = set()
    for name in _NAME.findall(expr):
        base = next((name.removesuffix(s) for s in _SERIES_SUFFIXES if name.endswith(s)), name)
        found.add(base if base in METRIC_NAMES else name)
    return found


def dashboard_exprs() -> list[str]:
    """Every query of every panel."""
    dashboard = json.loads((DEPLOY / "grafana" / "gpubot.json").read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]


def rule_exprs() -> dict[str, str]:
    """Alert name -> expression."""
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    return {r["alert"]: r["expr"] for group in rules["groups"] for r in group["rules"]}


def test_the_extractor_strips_histogram_suffixes_and_keeps_unknown_names():
    assert names_in("rate(gpubot_acquisition_seconds_bucket[5m])") == {"gpubot_acquisition_seconds"}
    assert names_in('up{job="gpubot"} == 0 or absent(gpubot_upp)') == {"gpubot_upp"}


def test_dashboard_uses_only_exported_metrics():
    exprs = dashboard_exprs()
    assert exprs
    unknown = {name for expr in exprs for name in names_in(expr)} - METRIC_NAMES
    assert unknown == set()


def test_alert_rules_use_only_exported_metrics():
    unknown = {name for expr in rule_exprs().values() for name in names_in(expr)} - METRIC_NAMES
    assert unknown == set()


def test_every_exported_metric_is_on_the_dashboard_or_in_a_rule():
    used = {name for expr in [*dashboard_exprs(), *rule_exprs().values()] for name in names_in(expr)}
    assert METRIC_NAMES - used == set()


def test_rules_cover_down_leader_provider_errors_and_acquisition_failures():
    rules = rule_exprs()
    assert "gpubot_up" in rules["GpubotDown"]
    assert "max(gpubot_scheduler_leader) < 1" in rules["GpubotSchedulerNotLeading"]
    assert "rate(gpubot_provider_errors_total[10m])" in rules["GpubotProviderErrors"]
    assert 'gpubot_acquisition_attempts_total{outcome!="launched"}' in rules["GpubotAcquisitionFailures"]


def test_dashboard_has_the_panels_operators_look_for():
    dashboard = json.loads((DEPLOY / "grafana" / "gpubot.json").read_text())
    by_title = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in dashboard["panels"]}
    assert "gpubot_gpus_available" in by_title["GPUs available by provider and GPU"]
    assert "by (provider, gpu)" in by_title["GPUs available by provider and GPU"]
    assert "gpubot_acquisition_seconds_bucket" in by_title["Acquisition latency"]
    assert "booking" in by_title["GPU temperature per booking"]
    assert "booking" in by_title["GPU utilisation per booking"]
    assert [p["id"] for p in dashboard["panels"]] == list(range(1, len(dashboard["panels"]) + 1))
