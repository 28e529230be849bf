"""What `POST /v1/realtime/client_secrets` takes, as OpenAI's GA API takes it: when the secret
expires, and the session it opens (checked by `entrypoints.realtime.protocol`, as a
`session.update`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict

from ...errors import EventError
from ..protocol.fields import Between, OneOf
from .protocol import SessionConfig, apply_update

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


def session_config(session: dict[str, Any], base: SessionConfig | None = None) -> SessionConfig:
    """The configuration a GA transcription `session` object asks for, given where no
    `session.update` carries it (a client secret's, a WebRTC call's offer), over `base` (a new
    session's by default); an `EventError` naming the field that is wrong."""
    kind = session.get("type", "transcription")
    if kind != "transcription":
        raise EventError(
            f"This server offers transcription sessions only (session.type 'transcription'), "
            f"not {kind!r}: Qwen3-ASR transcribes, it does not converse.",
            "invalid_value",
            "session.type",
        )
    return apply_update(base or SessionConfig(), {"type": "session.update", "session": session})
