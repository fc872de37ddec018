"""Process settings from the environment (12-factor), read once at start. `.env` is read when present. Each provider
kind reads its own variables (its `settings` in providers/<kind>/) from the same sources, through `Settings.read`."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import Field, PrivateAttr, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from gpubot.providers.registry import secret_values

__all__ = ["Settings"]

More = TypeVar("More", bound=BaseSettings)


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

    pagerduty_routing_key: SecretStr | None = None
    pagerduty_events_url: str = "https://events.pagerduty.com/v2/enqueue"
    prometheus_url: str | None = None

    _env_file: Any = PrivateAttr(default=".env")  # the .env this was read with (None: none), for `read`

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self._env_file = values.get("_env_file", self.model_config.get("env_file"))

    def read(self, model: type[More]) -> More:
        """More settings (a provider kind's) from the sources these came from: the environment and the same .env."""
        return model(_env_file=self._env_file)

    @property
    def socket_mode(self) -> bool:
        """Socket Mode when an app-level token is set."""
        return self.slack_app_token is not None

    def secrets(self) -> list[str]:
        """Every secret value set, the provider kinds' too, for redaction."""
        fields = (self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, self.pagerduty_routing_key,
                  self.metrics_token)
        own = [f.get_secret_value() for f in fields if f is not None and f.get_secret_value()]
        return own + secret_values(self.read)
