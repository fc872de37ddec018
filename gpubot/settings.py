"""Process settings from the environment (12-factor), read once at start. `.env` is read when present."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Every environment variable gpubot reads; secrets are SecretStr and never printed."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore",
                                      case_sensitive=False, env_ignore_empty=True)

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"

    database_url: str = "sqlite:///gpubot.db"
    gpubot_config: str = "gpubot.toml"
    gpubot_host: str = "0.0.0.0"
    gpubot_port: int = Field(default=3000, ge=1, le=65535)
    gpubot_public_url: str = "http://localhost:3000"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "debug", "info", "warning", "error"] = "INFO"
    log_format: Literal["json", "console"] = "console"
    # /metrics on its own port (not reachable through the public one), and/or behind a bearer token.
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    metrics_token: SecretStr | None = None

    autodl_token: SecretStr | None = None
    autodl_api_url: str = "https://api.autodl.com"
    lambda_api_key: SecretStr | None = None
    lambda_api_url: str = "https://cloud.lambda.ai/api/v1"
    runpod_api_key: SecretStr | None = None
    runpod_api_url: str = "https://api.runpod.io/v2"
    # Google Cloud: credentials come from google.auth (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application
    # default credentials, or workload identity). GCP_API_URL points Compute Engine calls elsewhere (a test fake);
    # GCP_ANONYMOUS_CREDENTIALS sends them unauthenticated, and is honoured only together with GCP_API_URL.
    google_application_credentials: str | None = None  # read by google-auth itself; here only to spot a .env-only one
    gcp_api_url: str | None = None
    gcp_anonymous_credentials: bool = False

    pagerduty_routing_key: SecretStr | None = None
    pagerduty_events_url: str = "https://events.pagerduty.com/v2/enqueue"
    prometheus_url: str | None = None

    @property
    def socket_mode(self) -> bool:
        """Socket Mode when an app-level token is set."""
        return self.slack_app_token is not None

    def secrets(self) -> list[str]:
        """Every secret value set, for redaction."""
        fields = (self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, self.autodl_token,
                  self.lambda_api_key, self.runpod_api_key, self.pagerduty_routing_key, self.metrics_token)
        return [f.get_secret_value() for f in fields if f is not None and f.get_secret_value()]
