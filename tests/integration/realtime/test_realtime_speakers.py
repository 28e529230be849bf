"""A Realtime session on the diarizing model (`gpt-4o-transcribe-diarize`): a conversation of
real voices (flite's CMU ARCTIC speakers) streamed over a WebSocket, as a microphone would,
against the real diarizer and the stand-in for vLLM. One session, asserted on in parts."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest
from openai.types.realtime import ConversationItemInputAudioTranscriptionSegment
from websockets.asyncio.client import connect

from qwen3_asr_server.catalog import DIARIZE
from tests.fixtures.conversations import RATE, Conversation, check_speakers, conversation
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.standin import StandIn

Event = dict[str, Any]
Segment = ConversationItemInputAudioTranscriptionSegment
CHUNK = 3200  # bytes of 16-bit PCM: 0.1 s, as a microphone sends it


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """Three speakers, 12 turns, ~45 s: several utterances, each speaker in more than one."""
    return conversation(3, 12, tmp_path_factory.mktemp("voices"), seed=3)


@pytest.fixture(scope="module")
def events(talk: Conversation) -> list[Event]:
    """Everything the server sent in one session that heard the whole conversation."""
    server = LiveServer(StandIn(MODEL, describe=True))
    try:
        url = server.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
        return asyncio.run(_session(url, talk))
    finally:
        server.stop()


async def _session(url: str, talk: Conversation) -> list[Event]:
    """The conversation and a second of silence after it, in 0.1 s chunks; the events until
    the last utterance is transcribed."""
    audio = {"format": {"type": "audio/pcm", "rate": RATE}, "transcription": {"model": DIARIZE}}
    update = {
        "type": "session.update",
        "session": {"type": "transcription", "audio": {"input": audio}},
    }
    pcm = talk.samples.tobytes() + bytes(2 * RATE)
    events: list[Event] = []
    async with connect(url) as ws:
        await ws.recv()  # session.created
        await ws.send(orjson.dumps(update).decode())
        for start in range(0, len(pcm), CHUNK):
            chunk = base64.b64encode(pcm[start : start + CHUNK]).decode()
            append = {"type": "input_audio_buffer.append", "audio": chunk}
            await ws.send(orjson.dumps(append).decode())
        async with asyncio.timeout(60):
            while not _through(events, round(talk.truth[-1].end * 1000)):
                events.append(orjson.loads(await ws.recv()))
    return events


def _through(events: list[Event], last_end_ms: int) -> bool:
    """Speech has stopped after the last turn, and every utterance is transcribed."""
    stopped = [e for e in events if e["type"] == "input_audio_buffer.speech_stopped"]
    done = [e for e in events if e["type"].endswith("transcription.completed")]
    heard_all = bool(stopped) and stopped[-1]["audio_end_ms"] >= last_end_ms
    return heard_all and len(done) == len(stopped)


def started(events: list[Event]) -> dict[str, float]:
    """Where each utterance (item) starts in the session's audio, in seconds."""
    return {
        e["item_id"]: e["audio_start_ms"] / 1000
        for e in events
        if e["type"] == "input_audio_buffer.speech_started"
    }


def segments(events: list[Event]) -> list[Segment]:
    return [
        Segment.model_validate(e)
        for e in events
        if e["type"] == "conversation.item.input_audio_transcription.segment"
    ]


def test_each_utterance_gets_segment_events(events: list[Event]) -> None:
    items = started(events)
    assert len(items) >= 4
    assert {segment.item_id for segment in segments(events)} == set(items)


def test_speakers_keep_their_labels_across_utterances(
    talk: Conversation, events: list[Event]
) -> None:
    """Times in the item, moved to the session's: each voice one label all along."""
    items = started(events)
    absolute = [
        segment.model_copy(
            update={
                "start": items[segment.item_id] + segment.start,
                "end": items[segment.item_id] + segment.end,
            }
        )
        for segment in segments(events)
    ]
    check_speakers(talk, absolute, {})


def test_an_items_transcript_is_its_segments_text(events: list[Event]) -> None:
    parts = segments(events)
    for item in started(events):
        [done] = [e for e in events if e["type"].endswith("completed") and e["item_id"] == item]
        assert done["transcript"] == " ".join(s.text for s in parts if s.item_id == item)
