"""What `POST /v1/realtime/calls` takes: an SDP offer, alone (`application/sdp`) or with the
session it opens (`multipart/form-data` with `sdp` and `session`, as the openai SDK sends it).

Checked here before a peer connection is made for it: the offer is SDP, it sends audio (the
call's input), opens a data channel (where its events go) and has the DTLS fingerprint its
media would be secured with (an offer without one could never connect); the session is a GA
transcription session, read as a `session.update` would be. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ...errors import CLOSE, APIError, invalid
from ..protocol.fields import Policy
from . import client_secrets
from .protocol import SessionConfig, check

PATH = "/v1/realtime/calls"
MAX_OFFER_BYTES = 64 << 10  # a browser's offer is 3-8 kB; its form, with a session, no more
# each section may get its own transport, and each transport its own UDP sockets
MAX_SECTIONS = 4
SDP = "application/sdp"
FORM = "multipart/form-data"


@dataclass(frozen=True)
class Offer:
    sdp: str
    config: SessionConfig


def offer(sdp: str, session: str | None, policy: Policy, base: SessionConfig | None) -> Offer:
    """The offer and the session it asks for, checked: `session` over `base` (what an
    ephemeral key was minted for; a new session's defaults without one)."""
    return Offer(checked_sdp(sdp), session_config(session, policy, base))


def checked_sdp(sdp: str) -> str:
    """The offer, if it is SDP that sends audio and opens a data channel."""
    lines = sdp.strip().splitlines()
    if not lines or lines[0].strip() != "v=0":
        raise invalid(
            "The offer is not SDP: it must start with 'v=0' (send the browser's "
            "RTCPeerConnection offer, its .sdp, as the body).",
            "sdp",
            "invalid_offer",
        )
    sections = [line[2:].split(" ", 1)[0] for line in lines if line.startswith("m=")]
    if len(sections) > MAX_SECTIONS:
        raise invalid(
            f"The offer has {len(sections)} media sections; a call takes at most "
            f"{MAX_SECTIONS} (its audio and its data channel, and a browser's extras).",
            "sdp",
            "invalid_offer",
        )
    media = set(sections)
    if "audio" not in media:
        raise invalid(
            "The offer has no audio (m=audio): add the microphone's track, or an audio "
            "transceiver, before creating it.",
            "sdp",
            "invalid_offer",
        )
    if "application" not in media:
        raise invalid(
            "The offer has no data channel (m=application): create the 'oai-events' channel "
            "before the offer; the call's events go on it.",
            "sdp",
            "invalid_offer",
        )
    if not any(line.startswith("a=fingerprint:") for line in lines):
        raise invalid(
            "The offer has no DTLS fingerprint (a=fingerprint), so a call made for it could "
            "never connect: send the offer as the browser's RTCPeerConnection made it.",
            "sdp",
            "invalid_offer",
        )
    return sdp


def session_config(
    session: str | None, policy: Policy, base: SessionConfig | None = None
) -> SessionConfig:
    """The `session` field (JSON) over `base`, as a `session.update` would configure it."""
    if session is None:
        return base or SessionConfig()
    try:
        given: Any = orjson.loads(session)
    except orjson.JSONDecodeError as exc:
        raise invalid(f"'session' is not valid JSON: {exc}.", "session", "invalid_json") from None
    if not isinstance(given, dict):
        raise invalid("'session' must be a JSON object.", "session", "invalid_type")
    config = client_secrets.session_config(given, base)
    check(config, policy)
    return config


def unsupported_type(content_type: str) -> APIError:
    return APIError(
        415,
        f"The body must be {SDP} (the offer) or {FORM} (fields 'sdp' and 'session'), not "
        f"{content_type or 'untyped'}.",
        code="unsupported_media_type",
    )


def offer_too_large(seen: int | None) -> APIError:
    """A body over MAX_OFFER_BYTES; the client is told to close (the rest is not read)."""
    sent = f" ({seen} bytes sent)" if seen is not None else ""
    return APIError(
        413,
        f"The offer is too large: a call's body may be at most {MAX_OFFER_BYTES} bytes{sent}.",
        code="request_too_large",
        headers=CLOSE,
    )
