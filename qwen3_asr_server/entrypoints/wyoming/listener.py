"""The Wyoming port, served in the app's event loop from its lifespan.

The socket is bound by `main` (or a worker) before vLLM is launched, as the HTTP one is, so
a busy port costs only a message. The listener accepts from the start of the lifespan to its
end: the drain (`capacity.drain`) runs before that end, so a command in flight finishes and a
new one is refused with an `error` event; then every connection left is closed. The
listener owns the commands' context (`vocabulary`) and, with `--hass-url`, the connection
that follows Home Assistant's names into it (`hass`), for as long as it listens.

Wyoming has no authentication, so what anyone who reaches the port can hold is bounded: at
most --wyoming-max-connections open over the whole server (`capacity.seats`, shared by the
workers), one more closed as soon as it is accepted; each reads its events within the
port's timeouts and size (`events`), and each command's audio is bounded (`command`).

A connection's seat is a lease (`capacity.lease`) of the seat alone, as every live session's
bookkeeping is a lease: taken in the protocol factory (a lease's steps are synchronous),
given back once, whatever ends the connection. It is not the command's lease (the handler's,
the engine's activity and the drain's count): a connection is open while it is idle between
commands, and an idle connection must neither keep the engine awake nor hold up a drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable

from ...capacity.lease import Lease
from ...errors import APIError
from .handler import Handler
from .hass import HomeAssistant
from .services import WyomingServices
from .vocabulary import Vocabulary

logger = logging.getLogger(__name__)


class _Refused(asyncio.Protocol):
    """A connection over --wyoming-max-connections: closed as soon as it is accepted, with
    no buffers and no handler built for it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class _Seated(asyncio.StreamReaderProtocol):
    """A connection within the limit: its lease (its seat) is given back when it is gone,
    whatever ended it (the handler, the client, the server's close)."""

    def __init__(self, lease: Lease, serve: Callable[..., Awaitable[None]]) -> None:
        super().__init__(asyncio.StreamReader(), serve)
        self._lease = lease

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._lease.give_back()  # once, however often the loop says the connection is lost


class Listener:
    def __init__(self, sock: socket.socket, services: WyomingServices) -> None:
        self.sock = sock
        self.services = services
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], Handler] = {}
        self._full = False  # refusing connections: said once in the log, until one is taken
        settings = services.settings
        self.vocabulary = Vocabulary(settings, services.policy.context_limit)
        self.home: HomeAssistant | None = None
        if settings.hass_url and settings.hass_token:
            self.home = HomeAssistant(
                settings.hass_url, settings.hass_token, self.vocabulary.update
            )

    async def start(self) -> None:
        """Listen, as `asyncio.start_server` does, within --wyoming-max-connections."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._connection, sock=self.sock, backlog=self.services.settings.backlog
        )
        host, port = self.sock.getsockname()[:2]
        logger.info("Wyoming protocol on tcp://%s:%d (no authentication)", host, port)
        if self.home is not None:
            self.home.start()

    async def close(self) -> None:
        """Stop accepting and following Home Assistant, close every connection and wait until
        their handlers are done."""
        if self.home is not None:
            await self.home.stop()
        if self._server is not None:
            self._server.close()
        for handler in list(self._connections.values()):
            await handler.stop()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()  # one still transcribing past the drain: its stream is closed
        if tasks:
            await asyncio.wait(tasks)
        if self._server is not None:
            await self._server.wait_closed()

    def _connection(self) -> asyncio.BaseProtocol:
        """A new connection's protocol: a seat taken (over all workers), or it is refused."""
        lease = Lease(seats=self.services.connections)
        try:
            lease.take()
        except APIError as full:  # counted (qwen3_asr_rejected_total), logged once a while
            if not self._full:
                logger.warning("Wyoming connections refused: %s", full.message)
            self._full = True
            return _Refused()
        self._full = False
        return _Seated(lease, self._serve)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handler = Handler(reader, writer, self.services, self.vocabulary)
        self._connections[task] = handler
        try:
            with contextlib.suppress(OSError):  # a client gone: nothing more to say to it
                await handler.run()
        except asyncio.CancelledError:
            # `close` ending it: the task ends quietly, as asyncio (3.11) logs a traceback
            # for a connection's task that ends cancelled
            task.uncancel()
        finally:
            del self._connections[task]
