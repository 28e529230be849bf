"""The Realtime API's client frames: each a JSON object with a string `type`. What a
`session.update` says is read in `entrypoints.realtime.protocol`. No I/O here."""

from __future__ import annotations

from typing import Any

import orjson

from ...errors import EventError


def parse_client_event(frame: str | bytes, max_bytes: int) -> dict[str, Any]:
    """One WebSocket frame as a client event: a JSON object with a string `type`."""
    if not isinstance(frame, str):
        raise EventError(
            "Binary frames are not part of the Realtime API: send each event as a JSON text "
            "frame (audio goes base64-encoded in input_audio_buffer.append).",
            "binary_frame_not_supported",
        )
    # characters <= UTF-8 bytes, so the encoding is only measured when it might matter
    if len(frame) > max_bytes or (not frame.isascii() and len(frame.encode()) > max_bytes):
        raise EventError(
            f"The event is larger than {max_bytes} bytes: send audio in smaller "
            "input_audio_buffer.append events.",
            "event_too_large",
        )
    try:
        event = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise EventError(f"The event is not valid JSON: {exc}.", "invalid_json") from None
    if not isinstance(event, dict):
        raise EventError("An event must be a JSON object.", "invalid_event")
    if not isinstance(event.get("type"), str):
        raise EventError("An event must have a string 'type'.", "invalid_event", "type")
    return event


def client_event_id(event: dict[str, Any]) -> str | None:
    """The client's own `event_id`, to be quoted back in an error about that event."""
    event_id = event.get("event_id")
    return event_id if isinstance(event_id, str) else None
