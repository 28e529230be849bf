"""A Wyoming command through the real engine, with the `wyoming` library's client as Home
Assistant uses it. The tiny model answers every recording with the same sentence."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptChunk
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info

from qwen3_asr_server.backend.launch import free_port
from tests.engine.conftest import MODEL, Engine, start_engine
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.tiny_model import EXPECTED_TEXT

pytestmark = pytest.mark.engine
RATE = 24000  # spoken_pcm's; resampled to 16 kHz by the server


@pytest.fixture(scope="module")
def wyoming_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, int]]:
    http = wyoming = free_port()
    while wyoming == http:
        wyoming = free_port()
    for engine in start_engine(tmp_path_factory, "--wyoming-port", str(wyoming), port=http):
        yield engine, wyoming


async def _events(client: AsyncTcpClient) -> list[Event]:
    events: list[Event] = []
    while not events or not Transcript.is_type(events[-1].type):
        event = await asyncio.wait_for(client.read_event(), 120)
        assert event is not None, f"closed after {events}"
        events.append(event)
    return events


async def test_a_command_through_the_engine(wyoming_engine: tuple[Engine, int]) -> None:
    _, port = wyoming_engine
    pcm = spoken_pcm([(0.3, False), (2.0, True), (0.3, False)], rate=RATE)
    stereo = np.repeat(np.frombuffer(pcm, dtype="<i2"), 2).tobytes()
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        described = await asyncio.wait_for(client.read_event(), 30)
        await client.write_event(Transcribe(name=MODEL, language="en").event())
        await client.write_event(AudioStart(rate=RATE, width=2, channels=2).event())
        step = RATE * 2 * 2 // 10
        for start in range(0, len(stereo), step):
            await client.write_event(AudioChunk(RATE, 2, 2, stereo[start : start + step]).event())
        await client.write_event(AudioStop().event())
        events = await _events(client)
    assert described is not None
    assert Info.from_event(described).asr[0].models[0].name == MODEL
    chunks = [TranscriptChunk.from_event(e).text for e in events if TranscriptChunk.is_type(e.type)]
    final = Transcript.from_event(events[-1])
    assert final.text == "".join(chunks) == EXPECTED_TEXT
    assert final.language == "en"
