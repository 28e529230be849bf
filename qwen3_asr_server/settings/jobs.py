"""The jobs' settings: where files and batches are kept, how much of the engine batches may
use, and where their webhooks go."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from pydantic import BaseModel, Field, SecretStr, model_validator

DATA_DIR = Path("~/.local/share/qwen3-asr-server")


class JobsSettings(BaseModel):
    data_dir: Path = Field(
        DATA_DIR,
        description="Folder of the uploaded files, the batches' outputs and (without "
        "--jobs-db) their SQLite database: a volume in a container.",
        json_schema_extra={"metavar": "DIR"},
    )
    jobs_db: SecretStr | None = Field(
        None,
        description="A postgresql://user:password@host/db URL: the batches' queue in "
        "PostgreSQL, shared by every server given the same URL and a shared --data-dir "
        "(none: SQLite in --data-dir).",
        json_schema_extra={"metavar": "URL", "default_text": "SQLite in --data-dir"},
    )
    batch_concurrency: int = Field(
        1,
        ge=1,
        description="Batch lines each server process (each of --workers) runs at once, beside "
        "interactive requests.",
        json_schema_extra={"metavar": "N"},
    )
    jobs_lease: float = Field(
        30.0,
        ge=1,
        description="Seconds a server's claim on a batch line lasts (renewed while it runs): "
        "how long a dead server's lines wait before another server takes them over.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    batch_max_attempts: int = Field(
        3,
        ge=1,
        description="Times a batch line (or a batch's validation) is claimed before it is "
        "given up: a line that kills or stalls the servers running it then fails alone "
        "(too_many_attempts in the error file) and its batch goes on.",
        json_schema_extra={"metavar": "N"},
    )
    max_file_mb: float = Field(
        512.0,
        gt=0,
        description="Largest file POST /v1/files takes, in MB (MiB); over it: 413.",
        json_schema_extra={"metavar": "MB"},
    )
    storage_quota_mb: float = Field(
        10240.0,
        gt=0,
        description="Most MB (MiB) all stored files (uploads and outputs) may hold together; "
        "an upload past it: 413; a batch whose outputs would pass it: failed.",
        json_schema_extra={"metavar": "MB"},
    )
    file_retention_days: float = Field(
        30.0,
        gt=0,
        description="Days a file without its own expires_after, and a batch's output, are "
        "kept; then they are deleted.",
        json_schema_extra={"metavar": "DAYS"},
    )
    batch_file_urls: bool = Field(
        False,
        description="Let batch lines name their audio by file_url (http/https), which the "
        "server downloads: never from loopback, private or link-local addresses (off: only "
        "uploaded files).",
    )
    webhook_url: str | None = Field(
        None,
        description="Where batch.completed, .failed, .cancelled and .expired events are "
        "POSTed, signed as Standard Webhooks (needs --webhook-secret).",
        json_schema_extra={"metavar": "URL"},
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="The whsec_... secret the webhooks are signed with (the openai SDK's "
        "client.webhooks.unwrap verifies them with it).",
        json_schema_extra={"metavar": "SECRET"},
    )

    @property
    def data_path(self) -> Path:
        return self.data_dir.expanduser()

    @model_validator(mode="after")
    def _webhooks(self) -> JobsSettings:
        if (self.webhook_url is None) != (self.webhook_secret is None):
            raise ValueError("--webhook-url and --webhook-secret go together")
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else None
        if secret is not None and not standard_secret(secret):
            raise ValueError(
                "--webhook-secret is a Standard Webhooks secret: whsec_ and padded base64 "
                "(the openai SDK cannot verify one without its padding)"
            )
        if self.webhook_url is not None and not self.webhook_url.startswith(
            ("http://", "https://")
        ):
            raise ValueError("--webhook-url is an http:// or https:// URL")
        return self


def standard_secret(secret: str) -> bool:
    """Whether `secret` is a Standard Webhooks secret the openai SDK can verify with."""
    if not secret.startswith("whsec_"):
        return False
    try:
        return bool(base64.b64decode(secret.removeprefix("whsec_"), validate=True))
    except binascii.Error:
        return False
