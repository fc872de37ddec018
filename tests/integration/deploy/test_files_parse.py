"""Every YAML and JSON file in deploy/ parses, passes yamllint, and the rendered Helm chart matches deploy/k8s/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

from gpubot.config import load_policy
from tests.integration.deploy.helm_render import CHART, K8S, render_chart

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
TEMPLATES = CHART / "templates"
YAML_FILES = sorted(p for p in [*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")] if TEMPLATES not in p.parents)
JSON_FILES = sorted(DEPLOY.rglob("*.json"))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DEPLOY)) for p in paths]


def test_deploy_holds_the_files_the_docs_name():
    for name in ("Dockerfile", "docker-compose.yml", "prometheus/prometheus.yml", "prometheus/alerts.yml",
                 "grafana/gpubot.json", "slack/manifest.yaml", "slack/manifest.socket.yaml", "helm/gpubot/Chart.yaml"):
        assert (DEPLOY / name).is_file(), name


@pytest.mark.parametrize("path", YAML_FILES, ids=_ids(YAML_FILES))
def test_yaml_parses_and_passes_yamllint(path: Path):
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    assert docs, f"{path} is empty"
    config = YamlLintConfig(file=str(DEPLOY / ".yamllint"))
    problems = [f"{p.line}:{p.column} {p.message}" for p in linter.run(path.read_text(), config)
                if p.level == "error"]
    assert problems == [], problems


@pytest.mark.parametrize("path", JSON_FILES, ids=_ids(JSON_FILES))
def test_json_parses(path: Path):
    assert isinstance(json.loads(path.read_text()), dict)


def test_committed_manifests_equal_the_rendered_chart():
    rendered = render_chart()
    committed = {p.name: p.read_text() for p in K8S.glob("*.yaml")}
    assert committed == rendered, "deploy/k8s is stale: run python -m tests.integration.deploy.helm_render"


def _rendered_docs(values: dict | None = None) -> dict[str, dict]:
    return {doc["kind"]: doc for text in render_chart(values).values() for doc in yaml.safe_load_all(text)}


def test_chart_runs_two_replicas_with_liveness_on_livez_and_readiness_on_readyz():
    docs = _rendered_docs()
    assert set(docs) == {"Deployment", "ConfigMap", "Service", "ServiceMonitor", "NetworkPolicy"}  # no Secret
    deployment = docs["Deployment"]["spec"]
    pod = deployment["template"]["spec"]
    container = pod["containers"][0]
    assert deployment["replicas"] == 2
    assert container["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert pod["automountServiceAccountToken"] is False
    refs = [e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e]
    assert refs and all(r["name"] == "gpubot-secrets" and r["optional"] is True for r in refs)
    assert container["ports"][0]["name"] == docs["Service"]["spec"]["ports"][0]["targetPort"] == "http"
    assert docs["ServiceMonitor"]["spec"]["endpoints"][0] == {"port": "http", "path": "/metrics", "interval": "30s"}
    assert docs["Service"]["spec"]["selector"] == deployment["template"]["metadata"]["labels"]


def test_no_password_is_committed():
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            assert "CHANGE-ME" not in path.read_text(errors="replace"), path
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert not any(values["secrets"].values())


def test_without_an_existing_secret_the_chart_refuses_to_render_unless_given_the_database_url():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values["existingSecret"] = ""
    with pytest.raises(ValueError, match="existingSecret"):
        render_chart(values)
    values["secrets"]["DATABASE_URL"] = "postgresql+psycopg://gpubot:s3cret@db/gpubot"
    docs = _rendered_docs(values)
    assert docs["Secret"]["stringData"]["DATABASE_URL"].endswith("@db/gpubot")
    refs = [e["valueFrom"]["secretKeyRef"]["name"] for e in
            docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"] if "valueFrom" in e]
    assert set(refs) == {"gpubot-secrets"}


def test_image_pinned_by_digest_and_metrics_on_their_own_port():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values["image"]["digest"] = "sha256:" + "a" * 64
    values["env"]["METRICS_PORT"] = "9100"
    docs = _rendered_docs(values)
    container = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/gpubot/gpubot@sha256:" + "a" * 64
    assert {"name": "metrics", "containerPort": 9100} in container["ports"]
    assert docs["ServiceMonitor"]["spec"]["endpoints"][0]["port"] == "metrics"
    ingress_ports = [p["port"] for p in docs["NetworkPolicy"]["spec"]["ingress"][0]["ports"]]
    assert ingress_ports == ["http", "metrics"]


def test_compose_binds_prometheus_and_grafana_to_loopback_and_requires_passwords():
    text = (DEPLOY / "docker-compose.yml").read_text()
    services = yaml.safe_load(text)["services"]
    assert services["prometheus"]["ports"] == ["127.0.0.1:9090:9090"]
    assert services["grafana"]["ports"] == ["127.0.0.1:3001:3000"]
    assert "${POSTGRES_PASSWORD:?" in services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert "${GRAFANA_ADMIN_PASSWORD:?" in services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"]
    assert ":-" not in text  # no default for any password
    assert "/readyz" in " ".join(services["gpubot"]["healthcheck"]["test"])


def test_chart_policy_is_a_valid_gpubot_toml(tmp_path):
    config = tmp_path / "gpubot.toml"
    config.write_text(_rendered_docs()["ConfigMap"]["data"]["gpubot.toml"])
    policy, _source = load_policy(str(config))
    assert policy.enabled_providers()


def test_chart_mounts_the_policy_where_gpubot_config_points():
    container = _rendered_docs()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert env["GPUBOT_CONFIG"] == mount["mountPath"] + "/gpubot.toml"


def test_service_monitor_can_be_turned_off():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values["serviceMonitor"]["enabled"] = False
    assert "ServiceMonitor" not in _rendered_docs(values)
