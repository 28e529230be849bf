"""The Wyoming port, served in the app's event loop from its lifespan.

The socket is bound by `main` (or a worker) before vLLM is launched, as the HTTP one is, so
a busy port costs only a message. The listener accepts from the start of the lifespan to its
end: the drain (`serving.drain`) runs before that end, so a command in flight finishes and a
new one is refused with an `error` event; then every connection left is closed. The
listener owns the commands' context (`vocabulary`) and, with `--hass-url`, the connection
that follows Home Assistant's names into it (`hass`), for as long as it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

from ..state import AppState
from .handler import Handler
from .hass import HomeAssistant
from .vocabulary import Vocabulary

logger = logging.getLogger(__name__)

# An event's header line is at most asyncio's 64 KiB (its reader's limit); its data and payload
# come after, as long as the header says. The wyoming library reads what it is told, so the
# reader here refuses more than this for one event: an audio chunk is 20-100 ms of audio,
# under 100 KB even as 48 kHz stereo 32-bit PCM.
MAX_EVENT_BYTES = 4 << 20


class BoundedReader(asyncio.StreamReader):
    """A connection's reader that will not read past MAX_EVENT_BYTES at once. The library
    takes its ValueError for the end of the stream, and the connection is closed."""

    async def readexactly(self, n: int) -> bytes:
        if n > MAX_EVENT_BYTES:
            raise ValueError(f"an event of {n} bytes is over {MAX_EVENT_BYTES}")
        return await super().readexactly(n)


class Listener:
    def __init__(self, sock: socket.socket, state: AppState) -> None:
        self.sock = sock
        self.state = state
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], Handler] = {}
        settings = state.settings
        self.vocabulary = Vocabulary(settings, state.policy.context_limit)
        self.home: HomeAssistant | None = None
        if settings.hass_url and settings.hass_token:
            self.home = HomeAssistant(
                settings.hass_url, settings.hass_token, self.vocabulary.update
            )

    async def start(self) -> None:
        """Listen, as `asyncio.start_server` does, with a `BoundedReader` per connection."""
        loop = asyncio.get_running_loop()

        def connection() -> asyncio.StreamReaderProtocol:
            return asyncio.StreamReaderProtocol(BoundedReader(), self._serve)

        self._server = await loop.create_server(
            connection, sock=self.sock, backlog=self.state.settings.backlog
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

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handler = Handler(reader, writer, self.state, self.vocabulary)
        self._connections[task] = handler
        try:
            with contextlib.suppress(OSError):  # a client gone: nothing more to say to it
                await handler.run()
        finally:
            del self._connections[task]
