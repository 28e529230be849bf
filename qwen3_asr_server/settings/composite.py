"""`Settings`: every group mixed into one, with the rules between groups, read from the
command line and the environment; `GROUPS`, their order in `--help` and the configuration
reference. What builds the whole server takes this; a module that reads a few settings takes
their group (see the package)."""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ..model import prompt
from .aligner import AlignerSettings
from .engine import EngineSettings
from .flags import ENV_PREFIX
from .jobs import JobsSettings
from .limits import LimitsSettings
from .logs import LoggingSettings
from .realtime import RealtimeSettings
from .server import ServerSettings
from .wyoming import WyomingSettings

__all__ = ["GROUPS", "Settings"]

GROUPS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("server", ServerSettings),
    ("engine", EngineSettings),
    ("aligner and diarizer", AlignerSettings),
    ("limits", LimitsSettings),
    ("jobs: files, batches, webhooks", JobsSettings),
    ("Realtime", RealtimeSettings),
    ("Wyoming and Home Assistant", WyomingSettings),
    ("logging and tracing", LoggingSettings),
)


class Settings(
    BaseSettings,
    WyomingSettings,
    LoggingSettings,
    RealtimeSettings,
    JobsSettings,
    LimitsSettings,
    AlignerSettings,
    EngineSettings,
    ServerSettings,
):
    """Every setting: each group's, and the rules between groups. (Wyoming's group comes
    first among the bases so that its checks run after the others', as before there were
    groups.)"""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        cli_kebab_case=True,
        cli_implicit_flags=True,
        cli_prog_name="server.py",
        cli_hide_none_type=True,
        extra="ignore",
    )

    @field_validator("model_aliases", "allowed_origins", "wyoming_keywords", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        """Comma-separated. pydantic-settings 2.7 hands a list flag over as a JSON list of the
        items it split at commas, where later releases give the flag's text."""
        if isinstance(value, str):
            items = json.loads(value) if value.startswith("[") else value.split(",")
            return [str(item).strip() for item in items if str(item).strip()]
        return value

    @field_validator(
        "api_key",
        "backend_api_key",
        "hass_token",
        "jobs_db",
        "keys_file",
        "webhook_secret",
        mode="before",
    )
    @classmethod
    def _empty_key_is_no_key(cls, value: Any) -> Any:
        """`QWEN_API_KEY=` (set but empty, as compose passes an unset variable) means no key."""
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("backend_url", "aligner_url", "hass_url")
    @classmethod
    def _strip_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value

    @model_validator(mode="after")
    def _two_ports(self) -> Settings:
        if self.wyoming_port is not None and self.wyoming_port == self.port:
            raise ValueError("--wyoming-port must differ from --port (the HTTP API's)")
        return self

    @model_validator(mode="after")
    def _wyoming_context_fits(self) -> Settings:
        found = prompt.context(self.wyoming_prompt, self.wyoming_keywords)
        size = len((found or "").encode())
        limit = prompt.context_limit(self.max_model_len, self.segment_seconds)
        if size > limit:
            raise ValueError(
                "--wyoming-prompt, --wyoming-keywords: " + prompt.context_too_long(size, limit)
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, ExtraEnvNames(settings_cls)


class ExtraEnvNames(PydanticBaseSettingsSource):
    """Reads the extra variable a field names in `json_schema_extra["env"]`.

    It ranks below the prefixed variable, so `QWEN3_ASR_API_KEY` beats `QWEN_API_KEY`.
    """

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        extra = field.json_schema_extra
        name = extra.get("env") if isinstance(extra, dict) else None
        if not isinstance(name, str):
            return None, field_name, False
        return os.environ.get(name), field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, field in self.settings_cls.model_fields.items():
            value, key, _ = self.get_field_value(field, name)
            if value is not None:
                values[key] = value
        return values
