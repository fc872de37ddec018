"""How `[providers.gcp]` is wired and what `gpubot check-config` says about it: zones, credentials, project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gpubot.providers.registry import policy_from_dict

from gpubot.settings import Settings
from gpubot.wiring import build_providers, provider_status

ZONES = ["us-central1-a", "us-central1-b"]


@pytest.fixture(autouse=True)
def no_ambient_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials from the host: no key file, no gcloud configuration, no metadata server."""
    for key in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GCP_API_URL",
                "GCP_ANONYMOUS_CREDENTIALS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert os.environ["NO_GCE_CHECK"] == "true"


def service_account_file(tmp_path: Path, project: str | None = "team-gpus") -> tuple[Path, str]:
    """A service-account key file as Google issues it (a fresh RSA key), and its private key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    info = {"type": "service_account", "private_key_id": "0123abcd", "private_key": key,
            "client_email": "gpubot@team-gpus.iam.gserviceaccount.com", "client_id": "1234567890",
            "token_uri": "https://oauth2.googleapis.com/token"}
    if project:
        info["project_id"] = project
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    return path, key


def status(gcp: dict, env_file: Path | None = None) -> str:
    """What check-config says of a GCP provider with `gcp`'s keys, the process environment and `env_file`."""
    policy = policy_from_dict({"providers": {"gcp": {"kind": "gcp", **gcp}}})
    return provider_status(policy, Settings(_env_file=env_file))["gcp"]


def test_without_the_gcp_extra_the_install_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gpubot.providers.gcp.adapter", None)  # as if the library were missing
    assert status({"project": "p", "zones": ZONES}) == (
        "not usable: google-cloud-compute is not installed (in gpubot's checkout: pip install '.[gcp]')")


def test_no_zones_is_named() -> None:
    assert status({"project": "p"}) == ('not usable: no zones: set providers.gcp.zones, e.g. ["us-central1-a", '
                                        '"us-central1-b"]')


def test_no_credentials_is_named() -> None:
    found = status({"project": "p", "zones": ZONES})
    assert found.startswith("not usable: no Google credentials (GOOGLE_APPLICATION_CREDENTIALS")


def test_a_service_account_file_is_used_and_its_project_is_the_default(monkeypatch, tmp_path: Path) -> None:
    # Google's client costs ~3 s of CPU to import: here, not at collection (tests/conftest.py, VENDOR_GROUPS).
    from gpubot.providers.gcp.adapter import GcpCompute

    path, _key = service_account_file(tmp_path)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    policy = policy_from_dict({"providers": {"gcp": {"kind": "gcp", "zones": ZONES}}})
    usable, unusable = build_providers(policy, Settings(_env_file=None))
    assert unusable == {} and isinstance(usable["gcp"], GcpCompute) and usable["gcp"].project == "team-gpus"
    assert status({"zones": ZONES, "project": "other"}) == "configured"


def test_no_project_anywhere_is_named(monkeypatch, tmp_path: Path) -> None:
    path, _key = service_account_file(tmp_path, project=None)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    assert status({"zones": ZONES}) == "not usable: no project: set providers.gcp.project (the credentials name none)"


def test_a_key_file_that_does_not_exist_is_named(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    found = status({"project": "p", "zones": ZONES})
    assert found.startswith("not usable: no Google credentials") and "missing.json" in found


def test_a_key_file_named_only_in_dot_env_is_named(tmp_path: Path) -> None:
    path, _key = service_account_file(tmp_path)
    (dot_env := tmp_path / ".env").write_text(f"GOOGLE_APPLICATION_CREDENTIALS={path}\n")
    found = status({"project": "p", "zones": ZONES}, env_file=dot_env)
    assert found == ("not usable: GOOGLE_APPLICATION_CREDENTIALS is only in .env: export it (google-auth reads the "
                     "process environment)")


def test_anonymous_credentials_only_with_a_test_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCP_ANONYMOUS_CREDENTIALS", "true")
    assert status({"project": "p", "zones": ZONES}) == (
        "not usable: GCP_ANONYMOUS_CREDENTIALS is honoured only with GCP_API_URL (a test endpoint)")
    monkeypatch.setenv("GCP_API_URL", "http://127.0.0.1:9")
    assert status({"project": "p", "zones": ZONES}) == "configured"


def test_check_config_reports_gcp_and_never_prints_the_key(tmp_path: Path) -> None:
    path, key = service_account_file(tmp_path)
    config = tmp_path / "gpubot.toml"
    config.write_text(f'[providers.gcp]\nkind = "gcp"\nzones = {json.dumps(ZONES)}\n'
                      '[providers.off]\nkind = "gcp"\nenabled = false\n')
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(path), "LOG_LEVEL": "DEBUG",
           "SLACK_BOT_TOKEN": "xoxb-gcp-test", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543"}
    result = subprocess.run([sys.executable, "-m", "gpubot", "check-config", "--config", str(config)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert "provider gcp (gcp): configured — credentials not tried" in result.stdout
    assert "provider off (gcp): disabled" in result.stdout
    body = key.splitlines()[5]
    assert body not in result.stdout and body not in result.stderr
