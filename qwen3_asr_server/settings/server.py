"""The HTTP server's settings: where it listens, in how many processes, and whom it answers."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, SecretStr


class ServerSettings(BaseModel):
    host: str = Field(
        "0.0.0.0",
        description="Interface the API listens on; anything but loopback with no --api-key is "
        "warned about at start.",
        json_schema_extra={"metavar": "HOST"},
    )
    port: int = Field(
        8000,
        ge=0,
        le=65535,
        description="Port the API listens on.",
        json_schema_extra={"metavar": "PORT"},
    )
    api_key: SecretStr | None = Field(
        None,
        description="Require `Authorization: Bearer <key>` on every route but /health, /livez, "
        "/metrics, the playground and /openapi.json.",
        json_schema_extra={"env": "QWEN_API_KEY", "metavar": "KEY"},
    )
    keys_file: Path | None = Field(
        None,
        description="A TOML file of projects and their keys, each with its own limits "
        "(docs: Keys and projects), read again within 5 s of a change; beside --api-key, which "
        "is then the key of the project `default`, or instead of it.",
        json_schema_extra={"metavar": "PATH"},
    )
    backlog: int = Field(
        2048,
        ge=1,
        description="Connections the kernel queues for the port before the server accepts "
        "them (listen(2)'s backlog; uvicorn's default), in one process and each worker alike.",
        json_schema_extra={"metavar": "N"},
    )
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="HTTP worker processes on the one port, all in front of the one vLLM; "
        "more than 1 when one process's CPU cannot keep the GPU busy (see Performance).",
        json_schema_extra={"metavar": "N"},
    )
    allow_remote_audio_urls: bool = Field(
        False,
        description="Let chat requests carry http(s) audio_url parts, which vLLM fetches "
        "(off: only data: URLs and input_audio, against server-side request forgery).",
    )
    ui: bool = Field(
        True,
        description="Serve the playground page at / (`--no-ui`: no page and no routes for it).",
    )

    @property
    def keyless(self) -> bool:
        """Whether anyone may call the API: neither --api-key nor --keys-file is set."""
        return self.api_key is None and self.keys_file is None
