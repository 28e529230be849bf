"""qwen3_asr_server.backend.aligner against a stand-in of the aligner's vLLM, over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from qwen3_asr_server.backend import roles
from qwen3_asr_server.backend.aligner import Aligner
from qwen3_asr_server.backend.supervisor import Supervisor
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model.alignment import Word
from qwen3_asr_server.observability.metrics import Metrics
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.audio import wav
from tests.fixtures.harness import ready
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin_aligner import SEGMENT_TIME, StandInAligner


@pytest.fixture
def standin() -> Iterator[tuple[StandInAligner, str]]:
    aligner = StandInAligner()
    server = ThreadedServer(aligner.app).start()
    yield aligner, server.url
    server.stop()


@contextlib.asynccontextmanager
async def client(url: str, wait: bool = True) -> AsyncIterator[Aligner]:
    """The aligner client, its supervisor watching `url` (and, with `wait`, seeing it ready)."""
    settings = Settings(aligner_url=url)
    backend = roles.aligner(settings)
    assert backend is not None
    supervisor = Supervisor(backend, settings, Metrics(), on_fatal=print)
    supervisor.start()
    aligner = Aligner(supervisor, SEGMENT_TIME, 10, 10, Metrics())
    try:
        if wait:
            await ready(supervisor)
        yield aligner
    finally:
        await aligner.aclose()
        await supervisor.stop()


async def test_words_come_from_the_rows_of_vllms_bytes_answer(
    standin: tuple[StandInAligner, str],
) -> None:
    fake, url = standin
    async with client(url) as aligner:
        found = await aligner.align(wav(2.0), "Hello, big world.", "English", offset=10.0)
    # three units over 2 s: bins 0/8, 8/17, 17/25 of 80 ms, offset by 10 s
    assert found == [
        Word("Hello", 10.0, 10.64, 0, 5),
        Word("big", 10.64, 11.36, 7, 10),
        Word("world", 11.36, 12.0, 11, 16),
    ]
    [request] = fake.requests
    assert request["model"] == fake.model  # the id it lists at /v1/models
    assert (
        request["text"]
        == "Hello<timestamp><timestamp>big<timestamp><timestamp>world<timestamp><timestamp>"
    )
    assert (request["encoding_format"], request["embed_dtype"]) == ("bytes", "float16")
    assert request["seconds"] == 2.0


async def test_a_text_without_words_asks_nothing(standin: tuple[StandInAligner, str]) -> None:
    fake, url = standin
    async with client(url) as aligner:
        assert await aligner.align(wav(1.0), " ... ", "English") == []
    assert fake.requests == []


async def test_a_wrong_answer_is_a_502() -> None:
    fake = StandInAligner(rows_off_by=1)
    server = ThreadedServer(fake.app).start()
    try:
        async with client(server.url) as aligner:
            with pytest.raises(APIError) as wrong:
                await aligner.align(wav(1.0), "Hello world", "English")
    finally:
        server.stop()
    assert (wrong.value.status, wrong.value.code) == (502, "backend_error")
    assert "5 rows for 4 timestamps" in wrong.value.message


async def test_an_aligner_not_ready_or_gone_is_a_503(standin: tuple[StandInAligner, str]) -> None:
    fake = StandInAligner()
    server = ThreadedServer(fake.app).start()
    async with client(server.url) as aligner:
        server.stop()  # gone before its supervisor's next probe: the request finds out
        with pytest.raises(APIError) as gone:
            await aligner.align(wav(1.0), "Hello", "English")
        assert gone.value.status == 503
        assert "not reachable" in gone.value.message
        for _ in range(250):  # then the supervisor notices, and nothing is sent
            if not aligner.supervisor.ready:
                break
            await asyncio.sleep(0.02)
        with pytest.raises(APIError) as down:
            await aligner.align(wav(1.0), "Hello", "English")
        assert down.value.status == 503
        assert "is restarting" in down.value.message
    async with client(standin[1], wait=False) as aligner:
        with pytest.raises(APIError) as loading:
            await aligner.align(wav(1.0), "Hello", "English")
        assert "still loading" in loading.value.message
    assert standin[0].requests == []
