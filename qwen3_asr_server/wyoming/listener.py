"""The Wyoming port, served in the app's event loop from its lifespan.

The socket is bound by `main` (or a worker) before vLLM is launched, as the HTTP one is, so
a busy port costs only a message. The listener accepts from the start of the lifespan to its
end: the drain (`serving.drain`) runs before that end, so a command in flight finishes and a
new one is refused with an `error` event; then every connection left is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

from ..state import AppState
from .handler import Handler

logger = logging.getLogger(__name__)


class Listener:
    def __init__(self, sock: socket.socket, state: AppState) -> None:
        self.sock = sock
        self.state = state
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], Handler] = {}

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, sock=self.sock, backlog=self.state.settings.backlog
        )
        host, port = self.sock.getsockname()[:2]
        logger.info("Wyoming protocol on tcp://%s:%d (no authentication)", host, port)

    async def close(self) -> None:
        """Stop accepting, close every connection and wait until their handlers are done."""
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
        handler = Handler(reader, writer, self.state)
        self._connections[task] = handler
        try:
            with contextlib.suppress(OSError):  # a client gone: nothing more to say to it
                await handler.run()
        finally:
            del self._connections[task]
