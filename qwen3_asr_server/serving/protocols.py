"""uvicorn's protocols with what they lack: a capped request head, a read timeout and a minimum
body rate (HTTP), and a quiet WebSocket refusal.

uvicorn 0.54 accumulates a request's URL and headers without bound (one endless header is a
memory DoS), and it has no timer for a client that sends its head slowly (slowloris), sends
nothing at all, or stalls in the middle of a body (slow POST): its keep-alive timer only covers
the idle time after a response. This subclass answers such clients itself, in OpenAI's error
shape, and closes the connection. A pause timer alone is re-armed by every byte, so a body also
has a deadline that each byte moves by its share of a minimum rate, as Apache's mod_reqtimeout
does (`body=read_timeout,MinRate=min_body_rate`): a client trickling a byte a second is cut
off after the grace, one on a slow link is not. An answer given before the body is in
(`entrypoints.middleware.early_close`) closes the connection, but lingering, as nginx's
`lingering_close` does: closed at once, a socket with unread bytes is reset, and a client still
sending its body (an upload without the key) would see "connection reset" instead of the 401 waiting
in its buffer. So the answer is followed by a FIN, and the rest of the body is read and dropped, up
to LINGER_SECONDS and `linger_bytes` (no more than the largest body the server takes), within
the same rate and pause bounds; a body declared larger is not waited for. Everything else is
uvicorn's own code, reached through super().

uvicorn 0.54's websockets-sansio protocol logs "ASGI callable returned without completing
handshake" at ERROR after every handshake the app refuses with an HTTP answer (an API key
missing, the model loading): `DenialAwareWebSocketsProtocol` counts the sent refusal as the
end of the handshake, as uvicorn's wsproto protocol does (uvicorn pull request #3138). Nor
does it let websockets log the handshake's headers at debug level, where the client's API key
is (`Authorization`, or the `openai-insecure-api-key.` subprotocol).
"""

from __future__ import annotations

import asyncio
import json
import logging
from http import HTTPStatus
from typing import Any, Literal

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..entrypoints.middleware.body_limits import content_length
from ..errors import APIError

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024  # request line + headers; one read chunk may overshoot it
LINGER_SECONDS = 30.0  # nginx's lingering_time: the most an early answer waits for its body


class _CloseAfterBody:
    """The transport as a request's cycle sees it: its `close` (an answer sent with
    `Connection: close`) is the protocol's, which lingers while the body is still coming."""

    def __init__(self, transport: asyncio.Transport, protocol: GuardedHttpToolsProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def write(self, data: bytes) -> None:
        self._transport.write(data)

    def close(self) -> None:
        self._protocol.close_after_answer()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol plus MAX_HEAD_BYTES, `read_timeout` and `min_body_rate` (bytes per
    second), set by `guarded_protocol`."""

    read_timeout: float = 30.0
    min_body_rate: float = 1024.0
    linger_bytes: int = 25 << 20

    # What the client owes us under the timer: nothing yet (a fresh connection), the rest of a
    # request head, or the rest of a body. Between requests nothing is timed here: that idle
    # time is uvicorn's keep-alive timer's business.
    _reading: Literal["nothing", "head", "body"] = "nothing"
    _head_bytes = 0
    _timer: asyncio.TimerHandle | None = None
    # When the body must be in at the latest (loop time): the grace after the head, moved on by
    # each chunk's share of min_body_rate; and whether the armed timer is that deadline's.
    _body_deadline = 0.0
    _too_slow = False
    # An answer went before the body was in: the rest of the body is read and dropped
    _lingering = False
    _lingered = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # the first request's head must be complete within read_timeout from now

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        if self._lingering:
            self._lingered += len(data)
            if self._lingered > self.linger_bytes:
                self._close()
            else:
                self._body_deadline += len(data) / self.min_body_rate
                self._arm()
            return
        if self._reading == "nothing":
            self._reading = "head"
            self._head_bytes = 0
            if self._timer is None:  # the next request on a kept-alive connection begins
                self._arm()
        elif self._reading == "body":
            self._body_deadline += len(data) / self.min_body_rate
            self._arm()  # the body moves: the allowed pause starts over
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded: no longer ours to time
            self._disarm()
        elif self._reading == "head" and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                logger.warning("Request head over %d bytes from %s", MAX_HEAD_BYTES, self.client)
                self._refuse(
                    431,
                    f"The request's headers are too large (the limit is {MAX_HEAD_BYTES} bytes).",
                    "headers_too_large",
                )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading = "head"
        self._head_bytes = 0
        if self._timer is None:  # a pipelined request that began in the previous one's chunk
            self._arm()

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if self.cycle is not None:  # uvicorn's cycle types its transport; this one acts alike
            self.cycle.transport = _CloseAfterBody(self.transport, self)  # type: ignore[assignment]
        self._reading = "body"
        self._body_deadline = self.loop.time() + self.read_timeout
        self._arm()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = "nothing"
        self._disarm()

    def on_response_complete(self) -> None:
        if not self._lingering:
            super().on_response_complete()
            return
        self.server_state.total_requests += 1
        self.flow.resume_reading()  # no keep-alive timer: the linger has its own

    def close_after_answer(self) -> None:
        """Close once an answer is sent: at once, unless the request's body is still coming
        and may be waited for (see the module's docstring)."""
        if (
            self._reading != "body"
            or (content_length(self.cycle.scope["headers"]) or 0) > self.linger_bytes
        ):
            self._close()
            return
        self._lingering = True
        self._body_deadline = min(self._body_deadline, self.loop.time() + LINGER_SECONDS)
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the answer, then the end: the client reads both
        self._arm()

    def _close(self) -> None:
        self._disarm()
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        delay = self.read_timeout
        if self._reading == "body" or self._lingering:
            left = self._body_deadline - self.loop.time()
            self._too_slow = left < delay
            delay = max(0.0, min(delay, left))
        self._timer = self.loop.call_later(delay, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self._lingering:  # the answer is sent: the body is not waited for any longer
            self.transport.close()
            return
        cycle = self.cycle
        if cycle is None or self._reading == "nothing":
            busy = False
        elif self._reading == "body":  # the app has not asked for the body yet
            busy = cycle.waiting_for_100_continue
        else:  # a pipelined head: the previous request is still being answered
            busy = not cycle.response_complete
        if busy or self.flow.read_paused:  # the slow one is us, not the client
            if self._reading == "body":  # whose rate counts from when we read again
                self._body_deadline = max(self._body_deadline, self.loop.time() + self.read_timeout)
            self._arm()
        elif self._reading == "nothing":
            self.transport.close()
        elif self._reading == "body" and self._too_slow:
            logger.warning("Request body from %s arrived too slowly", self.client)
            rate = self.min_body_rate / 1024
            message = f"The request body arrived slower than {rate:g} KiB/s."
            self._refuse(408, message, "request_timeout")
        else:
            logger.warning("Request from %s timed out while it was sent", self.client)
            message = f"The request was not received within {self.read_timeout:g} seconds."
            self._refuse(408, message, "request_timeout")

    def _refuse(self, status: int, message: str, code: str) -> None:
        """Answer `status` and close; only close if another response is already on the wire."""
        cycle = self.cycle
        if self._reading == "body":
            free = cycle is None or not cycle.response_started
        else:
            free = cycle is None or cycle.response_complete
        if free:
            error = APIError(status, message, code=code).body()
            body = json.dumps(error, separators=(",", ":")).encode()
            head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()]
            head += [
                name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers
            ]
            head += [
                b"content-type: application/json\r\n",
                b"content-length: %d\r\n" % len(body),
                b"connection: close\r\n\r\n",
            ]
            self.transport.write(b"".join(head) + body)
        self._disarm()
        self.transport.close()


def guarded_protocol(
    read_timeout: float, min_body_rate_kib: float, linger_bytes: int
) -> type[HttpToolsProtocol]:
    """The protocol class to pass to `uvicorn.Config(http=...)`, with this read timeout,
    minimum body rate (KiB/s) and most body bytes read after an early answer."""

    class Configured(GuardedHttpToolsProtocol):
        pass

    Configured.read_timeout = read_timeout
    Configured.min_body_rate = min_body_rate_kib * 1024
    Configured.linger_bytes = linger_bytes
    return Configured


class DenialAwareWebSocketsProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets protocol, for which a refusal sent completes the handshake, and
    which never logs the handshake's headers or the frames."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # websockets logs each header and frame at debug level when its logger (uvicorn's,
        # at --log-level debug) would show them: the client's API key among them
        self.conn.debug = False

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True
