"""A kept-alive connection the backend closes just as a request goes out on it.

vLLM's uvicorn closes a connection idle for 5 s; a request sent on it as it does sees the
connection close before any byte of an answer. Between the server and the stand-in here is
a proxy that does exactly that to every connection's second request, whenever it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from qwen3_asr_server.backend.client import KEEPALIVE_SECONDS
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, app_before, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn


class ClosingProxy:
    """Relays one request and its answer per connection; closes the connection, unanswered,
    when the client sends anything after that answer began."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.closed = 0  # connections closed on a request

    async def serve(self, client: asyncio.StreamReader, out: asyncio.StreamWriter) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        answered = asyncio.Event()

        async def answers() -> None:
            while data := await reader.read(1 << 16):
                answered.set()
                out.write(data)
                await out.drain()

        relay = asyncio.create_task(answers())
        try:
            while data := await client.read(1 << 16):
                if answered.is_set():
                    self.closed += 1
                    break
                writer.write(data)
                await writer.drain()
        finally:
            relay.cancel()
            writer.close()
            out.close()


@contextlib.asynccontextmanager
async def proxied(standin: StandIn) -> AsyncIterator[tuple[str, ClosingProxy]]:
    backend = ThreadedServer(standin.app).start()
    proxy = ClosingProxy(backend.port)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", proxy
    finally:
        server.close()
        backend.stop()


async def test_a_request_on_a_connection_the_backend_closed_is_sent_again_once() -> None:
    standin = StandIn()
    async with proxied(standin) as (url, proxy):
        harnesses = start_harness(Settings(model=MODEL, backend_url=url), standin)
        harness = await anext(harnesses)
        try:
            for _ in range(3):
                response = await harness.http.post(
                    "/v1/audio/transcriptions", files={"file": ("a.wav", wav(1.0))}
                )
                assert response.status_code == 200, response.text
                assert response.json()["text"] == "Hello world."
        finally:
            await harnesses.aclose()
    assert proxy.closed >= 2  # the second and third went out on a kept-alive connection first
    assert len(standin.requests) == 3  # and the backend saw each once


async def test_a_connection_idle_longer_than_the_pool_keeps_it_is_not_used_again() -> None:
    """The pool lets a connection go well before vLLM's 5 s would close it under a request."""
    standin = StandIn()
    async with app_before(standin) as harness:
        for pause in (0.0, 0.0, KEEPALIVE_SECONDS + 0.5):
            await asyncio.sleep(pause)
            response = await harness.http.post(
                "/v1/audio/transcriptions", files={"file": ("a.wav", wav(1.0))}
            )
            assert response.status_code == 200
    first, again, later = (request["connection"] for request in standin.requests)
    assert first == again != later
