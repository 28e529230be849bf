"""Client secrets (ephemeral keys): a short-lived key a browser or phone may hold, which opens a
Realtime session configured as it was minted, and nothing else. No I/O.

A secret is stateless, so that every worker of `--workers N` and every replica with the same
keys takes the ones the others minted, with no storage between them: `ek_`, then the URL-safe
base64 (unpadded, so it stays a valid HTTP token and WebSocket subprotocol) of the payload,
`{"e": expires_at, "s": session, "k": key}` as compact JSON, followed by its HMAC-SHA256. `k`
names the key that minted it (`entrypoints.middleware.keys`), and the key that signs is derived
from that key's digest (one HMAC under a label of its own): so a secret reveals nothing of the
key, a server without that key refuses it, and once the key is removed from the keys file (or
its secret changed) the secrets it minted open nothing. Without a key (a server with neither
`--api-key` nor `--keys-file`) the signing key is derived from nothing: anyone can mint one,
and a secret guards nothing (the server is open anyway); it still carries its session.

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

from ...errors import APIError, EventError
from .keys import Key, Keyring

PREFIX = "ek_"
MAX_CHARS = 6_000  # so that it fits a header line (websockets reads at most 8 KiB per line)
_LABEL = b"qwen3-asr-server realtime client secret v2"
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
    key: str | None = None  # the name of the key that minted it


def _signing_key(key: Key | None) -> bytes:
    return hmac.new(key.digest if key is not None else b"", _LABEL, hashlib.sha256).digest()


class ClientSecrets:
    """Mints and opens client secrets under the keys of `keyring`."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    def mint(self, grant: Grant, key: Key | None) -> str:
        """The secret carrying `grant`, minted by `key` (None on a server with no key); a 400
        naming `session` when it is too large to send."""
        fields: dict[str, Any] = {"e": grant.expires_at, "s": grant.session}
        if key is not None:
            fields["k"] = key.name
        payload = orjson.dumps(fields)
        mac = hmac.digest(_signing_key(key), payload, hashlib.sha256)
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
        fields = _fields(payload)
        name = fields.get("k")
        key = self.keyring.named(name) if isinstance(name, str) else None
        if self.keyring.closed and key is None:
            fields = {}  # minted without a key, or by a key this server does not have
        expected = hmac.digest(_signing_key(key), payload, hashlib.sha256)
        if not fields or not hmac.compare_digest(mac, expected):
            raise _refused(
                "Invalid ephemeral key: this server did not mint it (it was minted with another "
                "API key, or altered, or the key that minted it was revoked). Mint one with "
                "POST /v1/realtime/client_secrets."
            )
        grant = Grant(expires_at=fields["e"], session=fields["s"], key=key.name if key else None)
        if now >= grant.expires_at:
            when = datetime.fromtimestamp(grant.expires_at, UTC).isoformat(timespec="seconds")
            raise _refused(
                f"The ephemeral key expired at {when}: mint a new one with "
                "POST /v1/realtime/client_secrets."
            )
        return grant


def _fields(payload: bytes) -> dict[str, Any]:
    """What a payload says, before its MAC is checked: only which key to check it with is read
    from it then. Empty when it is not a payload at all."""
    try:
        fields = orjson.loads(payload) if payload else None
    except orjson.JSONDecodeError:
        return {}
    return fields if isinstance(fields, dict) else {}
