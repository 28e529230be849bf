"""Reading one Wyoming event off a connection, within the port's bounds.

The format is the `wyoming` library's: a JSON header line (`type`, optional `data`,
`data_length`, `payload_length`), then `data_length` bytes of JSON data merged into `data`,
then `payload_length` bytes of payload. The library's own reader trusts what it reads: a
header that is not an object, lacks `type` or gives a length that is not a number raises
whatever Python does (a traceback in the log for each such event), and so does a client that
hangs up mid-payload; it waits for ever for an event that never begins or never ends. This
one says what is wrong with an event as a `BadEvent` (one line for the log, and the `error`
event's code and text), waits at most `idle` seconds for an event to begin (`Idle`), and
`deadline` seconds for the whole of it once begun, at most MAX_EVENT_BYTES of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from wyoming.event import Event

# A header line is at most asyncio's 64 KiB (its reader's limit); its data and payload come
# after, as long as the header says, and are held whole until they have come: an audio chunk
# is 20-100 ms of audio, under 100 KB even as 48 kHz stereo 32-bit PCM.
MAX_EVENT_BYTES = 4 << 20


class BadEvent(Exception):
    """An event the server cannot read: the connection ends with an `error` event of this
    `code` and `text` (where it can still be written), and one line in the log at `level`."""

    def __init__(self, code: str, text: str, level: int = logging.WARNING) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.level = level


class Idle(Exception):
    """No event began within the idle timeout."""


async def read_event(reader: asyncio.StreamReader, idle: float, deadline: float) -> Event | None:
    """The next event; None at the end of the stream."""
    try:
        async with asyncio.timeout(idle):
            first = await reader.read(1)
    except TimeoutError:
        raise Idle from None
    if not first:
        return None
    try:
        async with asyncio.timeout(deadline):
            return await _rest(first, reader)
    except TimeoutError:
        raise BadEvent(
            "event-timeout", f"An event must arrive whole within {deadline:g} s of its start."
        ) from None
    except asyncio.IncompleteReadError:
        raise BadEvent(
            "incomplete-event", "The client hung up in the middle of an event.", logging.INFO
        ) from None


async def _rest(first: bytes, reader: asyncio.StreamReader) -> Event:
    """The event whose header begins with `first`."""
    try:
        line = first if first == b"\n" else first + await reader.readline()
    except ValueError:  # asyncio's LimitOverrunError, as readline raises it
        raise BadEvent("event-too-large", "An event's header line is over 64 KiB.") from None
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)
    header = _object(line, "header")
    kind = header.get("type")
    if not isinstance(kind, str) or not kind:
        raise BadEvent("bad-event", "An event's header needs its `type`, as a string.")
    data = header.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadEvent("bad-event", "An event's `data` must be an object.")
    data_length = _length(header, "data_length")
    payload_length = _length(header, "payload_length")
    if data_length + payload_length > MAX_EVENT_BYTES:
        raise BadEvent(
            "event-too-large",
            f"An event of {data_length + payload_length} bytes is over {MAX_EVENT_BYTES}.",
        )
    if data_length:
        data.update(_object(await reader.readexactly(data_length), "data"))
    payload = await reader.readexactly(payload_length) if payload_length else None
    return Event(type=kind, data=data, payload=payload)


def _object(text: bytes, part: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except ValueError:  # not JSON, or not UTF-8
        raise BadEvent("bad-event", f"An event's {part} is not JSON.") from None
    if not isinstance(found, dict):
        raise BadEvent("bad-event", f"An event's {part} must be a JSON object.")
    return found


def _length(header: dict[str, Any], field: str) -> int:
    value = header.get(field)
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise BadEvent("bad-event", f"An event's `{field}` must be a whole number of bytes.")
    return value
