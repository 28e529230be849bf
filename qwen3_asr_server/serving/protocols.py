"""uvicorn's protocols with what they lack: a capped request head and a read timeout (HTTP), and
a quiet WebSocket refusal.

uvicorn 0.54 accumulates a request's URL and headers without bound (one endless header is a
memory DoS), and it has no timer for a client that sends its head slowly (slowloris), sends
nothing at all, or stalls in the middle of a body (slow POST): its keep-alive timer only covers
the idle time after a response. This subclass answers such clients itself, in OpenAI's error
shape, and closes the connection. Everything else is uvicorn's own code, reached through super().

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

from ..errors import APIError

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024  # request line + headers; one read chunk may overshoot it


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol plus MAX_HEAD_BYTES and `read_timeout` (set by `guarded_protocol`)."""

    read_timeout: float = 30.0

    # What the client owes us under the timer: nothing yet (a fresh connection), the rest of a
    # request head, or the rest of a body. Between requests nothing is timed here: that idle
    # time is uvicorn's keep-alive timer's business.
    _reading: Literal["nothing", "head", "body"] = "nothing"
    _head_bytes = 0
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # the first request's head must be complete within read_timeout from now

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        if self._reading == "nothing":
            self._reading = "head"
            self._head_bytes = 0
            if self._timer is None:  # the next request on a kept-alive connection begins
                self._arm()
        elif self._reading == "body":
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
        self._reading = "body"
        self._arm()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = "nothing"
        self._disarm()

    def _arm(self) -> None:
        self._disarm()
        self._timer = self.loop.call_later(self.read_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or self._reading == "nothing":
            busy = False
        elif self._reading == "body":  # the app has not asked for the body yet
            busy = cycle.waiting_for_100_continue
        else:  # a pipelined head: the previous request is still being answered
            busy = not cycle.response_complete
        if busy or self.flow.read_paused:  # the slow one is us, not the client
            self._arm()
        elif self._reading == "nothing":
            self.transport.close()
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


def guarded_protocol(read_timeout: float) -> type[HttpToolsProtocol]:
    """The protocol class to pass to `uvicorn.Config(http=...)`, with this read timeout."""

    class Configured(GuardedHttpToolsProtocol):
        pass

    Configured.read_timeout = read_timeout
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
