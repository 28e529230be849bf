"""Shared fixtures: a clean environment, the stand-in upstream, the app in-process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest

from qwen3_asr_server.app import create_app
from qwen3_asr_server.settings import Settings
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn

MODEL = "qwen3-asr"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting leaks in from the machine running the tests."""
    for name in list(os.environ):
        if name.startswith(("QWEN3_ASR_", "QWEN_API_KEY")):
            monkeypatch.delenv(name)


@pytest.fixture(params=["modern", "legacy"])
def standin(request: pytest.FixtureRequest) -> Iterator[tuple[StandIn, ThreadedServer]]:
    """The stand-in upstream in each of vLLM's two styles, on a real loopback port."""
    fake = StandIn(MODEL, request.param)
    server = ThreadedServer(fake.app).start()
    yield fake, server
    server.stop()


class Harness:
    """The app in-process (lifespan running), with raw HTTP and OpenAI SDK clients."""

    def __init__(self, app: Any, standin: StandIn | None, api_key: str = "unused") -> None:
        self.app = app
        self.standin = standin
        transport = httpx.ASGITransport(app=app)
        self.http = httpx.AsyncClient(transport=transport, base_url="http://asr.test")
        self.sdk = openai.AsyncOpenAI(
            base_url="http://asr.test/v1",
            api_key=api_key,
            http_client=httpx.AsyncClient(transport=transport),
            max_retries=0,
        )

    @property
    def supervisor(self) -> Any:
        return self.app.state.asr.supervisor


async def ready(supervisor: Any, timeout: float = 5.0) -> None:
    """Wait until `supervisor` sees its backend ready."""
    deadline = time.monotonic() + timeout
    while not supervisor.ready:
        assert time.monotonic() < deadline, f"{supervisor.url} never became ready"
        await asyncio.sleep(0.02)


async def start_harness(
    settings: Settings, standin: StandIn | None = None, api_key: str = "unused"
) -> AsyncIterator[Harness]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        harness = Harness(app, standin, api_key)
        if standin is not None:
            await ready(harness.supervisor)
        try:
            yield harness
        finally:
            await harness.http.aclose()
            await harness.sdk.close()


@contextlib.asynccontextmanager
async def app_before(standin: StandIn, **settings: Any) -> AsyncIterator[Harness]:
    """The app, with these settings, in front of `standin` served on a loopback port."""
    server = ThreadedServer(standin.app).start()
    harnesses = start_harness(Settings(model=MODEL, backend_url=server.url, **settings), standin)
    try:
        yield await anext(harnesses)
    finally:
        await harnesses.aclose()
        server.stop()


@pytest.fixture
async def harness(standin: tuple[StandIn, ThreadedServer]) -> AsyncIterator[Harness]:
    fake, server = standin
    async for h in start_harness(Settings(model=MODEL, backend_url=server.url), fake):
        yield h


class LiveServer:
    """The whole server on a real loopback port, in front of a stand-in upstream: for tools
    that run as their own processes (benchmark.py, test-asr.py)."""

    def __init__(self, standin: StandIn, api_key: str | None = None, **settings: Any) -> None:
        self.standin = standin
        self.api_key = api_key
        self._backend = ThreadedServer(standin.app).start()
        config = Settings(model=MODEL, backend_url=self._backend.url, api_key=api_key, **settings)
        self._server = ThreadedServer(create_app(config)).start()
        self.url = self._server.url
        deadline = time.monotonic() + 10
        while httpx.get(f"{self.url}/health").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the live server never became ready")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.stop()
        self._backend.stop()


@pytest.fixture
def live_server() -> Iterator[LiveServer]:
    """A live server with a stand-in that takes 20 ms an answer and names the audio's length."""
    server = LiveServer(StandIn(MODEL, delay=0.02, describe=True))
    yield server
    server.stop()
