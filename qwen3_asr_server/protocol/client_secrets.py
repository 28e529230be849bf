"""What `POST /v1/realtime/client_secrets` takes, as OpenAI's GA API takes it: when the secret
expires, and the session it opens (checked by `protocol.realtime`, as a `session.update`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict

from .fields import Between, OneOf

DEFAULT_SECONDS, MIN_SECONDS, MAX_SECONDS = 600, 10, 7200  # OpenAI's default and range


class SecretExpiry(BaseModel):
    """`expires_after`: seconds from the secret's creation, the only anchor OpenAI offers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    anchor: Annotated[str, OneOf(("created_at",))] = "created_at"
    seconds: Annotated[int, Between(MIN_SECONDS, MAX_SECONDS, whole=True)] = DEFAULT_SECONDS


class ClientSecretCreate(BaseModel):
    """The body; without `session`, a transcription session with the defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expires_after: SecretExpiry = SecretExpiry()
    session: dict[str, Any] = {"type": "transcription"}
