"""Client secrets (ephemeral keys): a short-lived key a browser or phone may hold, which opens a
Realtime session configured as it was minted, and nothing else. No I/O.

A secret is stateless, so that every worker of `--workers N` and every replica that shares
`--api-key` takes the ones the others minted, with no storage between them: `ek_`, then the
URL-safe base64 (unpadded, so it stays a valid HTTP token and WebSocket subprotocol) of the
payload, `{"e": expires_at, "s": session}` as compact JSON, followed by its HMAC-SHA256. The
key that signs is derived from the API key (one HMAC under a label of its own), so a secret
reveals nothing of the API key, and a server with another key refuses it. Without `--api-key`
the signing key is derived from nothing: anyone can mint one, and a secret guards nothing (the
server is open anyway); it still carries its session.

The payload is signed, not encrypted: whoever holds a secret can read the session it carries
(their own prompt and keywords). `session` is the client's own GA `session` object, applied
again (`entrypoints.realtime.protocol.apply_update`) when a session opens, so it means the same
there as it did when it was minted.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

import orjson
import pybase64
from pydantic import SecretStr

from ...errors import APIError, EventError

PREFIX = "ek_"
MAX_CHARS = 6_000  # so that it fits a header line (websockets reads at most 8 KiB per line)
_LABEL = b"qwen3-asr-server realtime client secret v1"
_MAC_BYTES = hashlib.sha256().digest_size
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def is_ephemeral(token: str | None) -> TypeGuard[str]:
    """Whether a bearer token is a client secret rather than an API key."""
    return token is not None and token.startswith(PREFIX)


def _refused(message: str) -> APIError:
    return APIError(401, message, code="invalid_api_key", headers=_CHALLENGE)


@dataclass(frozen=True)
class Grant:
    """What a valid secret carries: when it expires (seconds since the epoch), and the session
    configuration it was minted for, as the client wrote it."""

    expires_at: int
    session: dict[str, Any]


class ClientSecrets:
    """Mints and opens client secrets under the key derived from `api_key`."""

    def __init__(self, api_key: SecretStr | None) -> None:
        secret = api_key.get_secret_value().encode() if api_key is not None else b""
        self._key = hmac.new(secret, _LABEL, hashlib.sha256).digest()

    def mint(self, grant: Grant) -> str:
        """The secret carrying `grant`; a 400 naming `session` when it is too large to send."""
        payload = orjson.dumps({"e": grant.expires_at, "s": grant.session})
        mac = hmac.digest(self._key, payload, hashlib.sha256)
        token = PREFIX + pybase64.urlsafe_b64encode(payload + mac).decode().rstrip("=")
        if len(token) > MAX_CHARS:
            raise EventError(
                f"The session is too large to carry in a client secret ({len(token)} "
                f"characters, at most {MAX_CHARS}): shorten its prompt or keywords.",
                "invalid_value",
                "session",
            )
        return token

    def open(self, token: str, now: float) -> Grant:
        """What `token` grants at `now`; OpenAI's 401 when this server did not mint it (another
        key's, altered, not one at all) or it expired."""
        encoded = token.removeprefix(PREFIX)
        try:
            raw = pybase64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except (binascii.Error, ValueError):
            raw = b""
        payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        expected = hmac.digest(self._key, payload, hashlib.sha256)
        if not payload or not hmac.compare_digest(mac, expected):
            raise _refused(
                "Invalid ephemeral key: this server did not mint it (it was minted with another "
                "API key, or altered). Mint one with POST /v1/realtime/client_secrets."
            )
        fields = orjson.loads(payload)
        grant = Grant(expires_at=fields["e"], session=fields["s"])
        if now >= grant.expires_at:
            when = datetime.fromtimestamp(grant.expires_at, UTC).isoformat(timespec="seconds")
            raise _refused(
                f"The ephemeral key expired at {when}: mint a new one with "
                "POST /v1/realtime/client_secrets."
            )
        return grant
