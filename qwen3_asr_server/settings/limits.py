"""The limits: how long, how large and how many, so that no client holds the server alone."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import MIB


class LimitsSettings(BaseModel):
    request_timeout: float = Field(
        600.0,
        gt=0,
        description="Seconds one upstream request may take; then 504.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    backend_wait: float = Field(
        120.0,
        gt=0,
        description="Seconds a long recording with pieces answered waits for a backend that "
        "went away to serve again (then 503); a request with none answered gets the 503 at once.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    read_timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds a client may take to send a request's head, and the longest pause "
        "while it sends the body; then 408 and the connection closes.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    min_body_rate: float = Field(
        1.0,
        gt=0,
        description="Slowest a request body may arrive, in KiB/s on average, after a grace of "
        "--read-timeout seconds; then 408 and the connection closes.",
        json_schema_extra={"metavar": "KIB/S"},
    )
    shutdown_timeout: int = Field(
        30,
        ge=0,
        description="Seconds accepted requests get to finish on SIGTERM; those still "
        "running then get 503.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    max_upload_mb: float = Field(
        25.0,
        gt=0,
        description="Largest audio upload in MB (MiB), as OpenAI's 25 MB; over it: 413.",
        json_schema_extra={"metavar": "MB"},
    )
    max_audio_seconds: float = Field(
        10800.0,
        gt=0,
        description="Longest audio accepted, in seconds (decoded length); longer: 400.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    audio_budget_seconds: float | None = Field(
        None,
        gt=0,
        description="Seconds of decoded audio all requests together may hold at once, over "
        "every worker; more wait their turn up to --queue-timeout, then 429 with Retry-After.",
        json_schema_extra={
            "metavar": "SECONDS",
            "default_text": "a quarter of the memory at 32 KiB per second",
        },
    )
    segment_seconds: float = Field(
        30.0,
        gt=1,
        description="Longest piece of audio sent to the model at once; longer audio is cut "
        "at pauses into pieces of at most this length.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    segment_concurrency: int = Field(
        8,
        gt=0,
        description="Pieces of one request transcribed at the same time.",
        json_schema_extra={"metavar": "N"},
    )
    decode_workers: int = Field(
        2,
        gt=0,
        description="Threads decoding uploads at the same time, per worker (CPU work).",
        json_schema_extra={"metavar": "N"},
    )
    max_concurrent: int | None = Field(
        None,
        gt=0,
        description="Requests to vLLM in flight at once; more wait in the queue.",
        json_schema_extra={"metavar": "N", "default_text": "--max-num-seqs, else 64"},
    )
    max_queue: int = Field(
        256,
        ge=0,
        description="Requests that may wait for a slot; beyond it: 429 with Retry-After.",
        json_schema_extra={"metavar": "N"},
    )
    queue_timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds a request may wait for a slot before a 429.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    max_json_mb: float = Field(
        36.0,
        gt=0,
        description="Largest JSON body (chat completions, base64 audio included) in MB (MiB).",
        json_schema_extra={"metavar": "MB"},
    )

    @property
    def upload_bytes(self) -> int:
        """The largest audio file, in bytes (--max-upload-mb)."""
        return int(self.max_upload_mb * MIB)

    @property
    def json_bytes(self) -> int:
        """The largest JSON body, in bytes (--max-json-mb)."""
        return int(self.max_json_mb * MIB)
