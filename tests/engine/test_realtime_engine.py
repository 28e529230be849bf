"""Realtime sessions through the real engine, vLLM started with --vllm-realtime: speech goes
into vLLM's own /v1/realtime as it is spoken; sessions it cannot serve take the chat path.
The tiny model answers every 5 s segment with the same sentence, whatever the audio.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from tests.engine.conftest import API_KEY, Engine, start_engine
from tests.fixtures.audio import wav
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.tiny_model import EXPECTED_TEXT
from tests.fixtures.websocket import connect

pytestmark = pytest.mark.engine
COMPLETED = "conversation.item.input_audio_transcription.completed"
DELTA = "conversation.item.input_audio_transcription.delta"


@pytest.fixture(scope="module")
def realtime_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    yield from start_engine(tmp_path_factory, "--vllm-realtime")


async def _transcripts(engine: Engine, update: dict[str, Any] | None = None) -> list[dict]:
    """0.5 s of silence and 6 s of speech; if vLLM streams, wait for its first text before
    the utterance goes on (1 s more speech, then 1 s of silence); the events, until done."""
    url = engine.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    headers = {"Authorization": f"Bearer {API_KEY}"}
    events: list[dict] = []

    async def until(kind: str) -> None:
        async with asyncio.timeout(120):
            while not any(event["type"] == kind for event in events):
                events.append(json.loads(await ws.recv()))

    async with connect(url, additional_headers=headers) as ws:
        if update is not None:
            await ws.send(json.dumps({"type": "session.update", "session": update}))
        await _play(ws, [(0.5, False), (6.0, True)])
        if update is None:
            await until(DELTA)  # the speaker has not stopped: nothing was committed yet
            assert not any(event["type"] == "input_audio_buffer.committed" for event in events)
        await _play(ws, [(1.0, True), (1.0, False)], seed=1)
        await until(COMPLETED)
    return events


async def _play(ws: ClientConnection, pattern: list[tuple[float, bool]], seed: int = 0) -> None:
    pcm = spoken_pcm(pattern, seed=seed)
    for start in range(0, len(pcm), 4800):
        chunk = base64.b64encode(pcm[start : start + 4800]).decode()
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))


def _through(ws_events: list[dict], kind: str) -> list[dict]:
    return [event for event in ws_events if event["type"] == kind]


def test_speech_streams_into_vllms_realtime_endpoint(realtime_engine: Engine) -> None:
    events = asyncio.run(_transcripts(realtime_engine))
    [done] = _through(events, COMPLETED)
    # 7.8 s of audio went in (until the pause was recognised): two of vLLM's 5 s segments,
    # each answered with its own prefix
    assert done["transcript"] == f"{EXPECTED_TEXT} {EXPECTED_TEXT}"
    deltas = _through(events, DELTA)
    assert "".join(event["delta"] for event in deltas) == done["transcript"]
    assert done["usage"]["output_tokens"] > 0


def test_a_session_with_a_language_takes_the_chat_path(realtime_engine: Engine) -> None:
    update = {"type": "transcription", "audio": {"input": {"transcription": {"language": "en"}}}}
    events = asyncio.run(_transcripts(realtime_engine, update))
    [done] = _through(events, COMPLETED)
    assert done["transcript"] == EXPECTED_TEXT  # one request for the whole utterance


def test_http_transcription_still_works_with_the_realtime_architecture(
    realtime_engine: Engine,
) -> None:
    with realtime_engine.http() as http:
        response = http.post("/v1/audio/transcriptions", files={"file": ("a.wav", wav(2.0))})
    assert response.status_code == 200
    assert response.json()["text"] == EXPECTED_TEXT
