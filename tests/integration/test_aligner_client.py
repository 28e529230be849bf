"""qwen3_asr_server.aligner against a stand-in of the aligner's vLLM, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from qwen3_asr_server.aligner import Aligner
from qwen3_asr_server.alignment import Word
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.launch import free_port
from tests.fixtures.audio import wav
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin_aligner import SEGMENT_TIME, StandInAligner


@pytest.fixture
def standin() -> Iterator[tuple[StandInAligner, str]]:
    aligner = StandInAligner()
    server = ThreadedServer(aligner.app).start()
    yield aligner, server.url
    server.stop()


async def test_words_come_from_the_rows_of_vllms_bytes_answer(
    standin: tuple[StandInAligner, str],
) -> None:
    fake, url = standin
    aligner = Aligner(url, SEGMENT_TIME)
    try:
        found = await aligner.align(wav(2.0), "Hello, big world.", "English", offset=10.0)
    finally:
        await aligner.aclose()
    # three units over 2 s: bins 0/8, 8/17, 17/25 of 80 ms, offset by 10 s
    assert found == [
        Word("Hello", 10.0, 10.64),
        Word("big", 10.64, 11.36),
        Word("world", 11.36, 12.0),
    ]
    [request] = fake.requests
    assert request["model"] == fake.model  # asked of the aligner: GET /v1/models
    assert (
        request["text"]
        == "Hello<timestamp><timestamp>big<timestamp><timestamp>world<timestamp><timestamp>"
    )
    assert (request["encoding_format"], request["embed_dtype"]) == ("bytes", "float16")
    assert request["seconds"] == 2.0


async def test_a_text_without_words_asks_nothing(standin: tuple[StandInAligner, str]) -> None:
    fake, url = standin
    aligner = Aligner(url, SEGMENT_TIME)
    try:
        assert await aligner.align(wav(1.0), " ... ", "English") == []
    finally:
        await aligner.aclose()
    assert fake.requests == []


async def test_a_wrong_answer_is_a_502_and_no_answer_a_503() -> None:
    fake = StandInAligner(rows_off_by=1)
    server = ThreadedServer(fake.app).start()
    aligner = Aligner(server.url, SEGMENT_TIME)
    try:
        with pytest.raises(APIError) as wrong:
            await aligner.align(wav(1.0), "Hello world", "English")
        assert (wrong.value.status, wrong.value.code) == (502, "backend_error")
        assert "5 rows for 4 timestamps" in wrong.value.message
    finally:
        await aligner.aclose()
        server.stop()
    gone = Aligner(f"http://127.0.0.1:{free_port()}", SEGMENT_TIME)
    try:
        with pytest.raises(APIError) as refused:
            await gone.align(wav(1.0), "Hello", "English")
        assert refused.value.status == 503
    finally:
        await gone.aclose()
