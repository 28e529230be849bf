"""Fixtures the diarization tests share: real flite conversations take seconds of CAM++ each, so
a module's tests share one stand-in that names the length of each piece it hears."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.harness import MODEL, Harness, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn


@pytest.fixture(scope="module")
def describing() -> Iterator[tuple[StandIn, ThreadedServer]]:
    """The stand-in (vLLM's modern style, describing what it hears) on a loopback port."""
    fake = StandIn(MODEL, "modern", describe=True)
    running = ThreadedServer(fake.app).start()
    yield fake, running
    running.stop()


@pytest.fixture
async def described(describing: tuple[StandIn, ThreadedServer]) -> AsyncIterator[Harness]:
    """The app in front of `describing`."""
    fake, running = describing
    async for h in start_harness(Settings(model=MODEL, backend_url=running.url), fake):
        yield h
