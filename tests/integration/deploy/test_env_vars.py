"""The environment variables in .env.example, the Helm chart, the compose file and the Dockerfile are the ones the
Settings class and the provider kinds' settings read (upper-cased), in both directions where each file is meant to list
them all."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from gpubot.providers.registry import all_kinds

from gpubot.settings import Settings
from tests.integration.deploy.helm_render import render_chart

ROOT = Path(__file__).resolve().parents[3]
# gpubot's own settings and each provider kind's (providers/<kind>/config.py).
SETTINGS = {name.upper() for model in (Settings, *(k.settings for k in all_kinds().values() if k.settings))
            for name in model.model_fields}
# Read by boto3 itself for the AWS provider (see .env.example).
AWS = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"}
# Interpolated into the other compose services, not read by gpubot.
COMPOSE_ONLY = {"POSTGRES_PASSWORD", "GRAFANA_ADMIN_PASSWORD"}
# Set for Python itself in the image.
IMAGE_ONLY = {"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "MPLCONFIGDIR", "PIP_NO_CACHE_DIR",
              "PIP_DISABLE_PIP_VERSION_CHECK"}


def test_settings_fields_are_known():
    assert {"SLACK_BOT_TOKEN", "DATABASE_URL", "GPUBOT_CONFIG", "GPUBOT_PORT"} <= SETTINGS


def test_env_example_lists_exactly_the_settings():
    names = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert names == SETTINGS


def test_chart_values_list_exactly_the_settings():
    values = yaml.safe_load((ROOT / "deploy" / "helm" / "gpubot" / "values.yaml").read_text())
    assert set(values["env"]) | set(values["secrets"]) == SETTINGS
    assert set(values["env"]) & set(values["secrets"]) == set()


def test_rendered_deployment_sets_exactly_the_settings():
    deployment = yaml.safe_load(render_chart()["deployment.yaml"])
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {e["name"] for e in env} == SETTINGS
    secret = {e["name"] for e in env if "valueFrom" in e}
    assert {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "DATABASE_URL"} <= secret


def test_compose_passes_only_settings_to_gpubot():
    text = (ROOT / "deploy" / "docker-compose.yml").read_text()
    gpubot = yaml.safe_load(text)["services"]["gpubot"]
    assert set(gpubot["environment"]) <= SETTINGS
    assert gpubot["env_file"] == "../.env"
    interpolated = set(re.findall(r"\$\{(\w+)", text))
    assert interpolated <= SETTINGS | AWS | COMPOSE_ONLY, interpolated - SETTINGS - COMPOSE_ONLY


def test_dockerfile_sets_only_settings_and_python_variables():
    text = (ROOT / "deploy" / "Dockerfile").read_text().replace("\\\n", " ")
    names = {name for line in text.splitlines() if line.startswith("ENV ")
             for name in re.findall(r"([A-Z][A-Z0-9_]*)=", line)}
    assert names - IMAGE_ONLY <= SETTINGS
    assert {"GPUBOT_HOST", "GPUBOT_PORT", "GPUBOT_CONFIG"} <= names
