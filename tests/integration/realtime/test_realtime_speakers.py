"""A Realtime session on the diarizing model (`gpt-4o-transcribe-diarize`): a conversation of
real voices (flite's CMU ARCTIC speakers) streamed over a WebSocket, as a microphone would,
against the real diarizer and the stand-in for vLLM. One session, asserted on in parts."""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures.conversations import Conversation, check_speakers, conversation
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.realtime_speakers import Event, segments, session, started
from tests.fixtures.standin import StandIn


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
        return asyncio.run(session(url, talk))
    finally:
        server.stop()


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


def test_max_speakers_caps_the_voices_a_session_opens(talk: Conversation) -> None:
    """Three voices, a cap of two: the third's utterances go to the nearer of the two."""
    server = LiveServer(StandIn(MODEL, describe=True))
    try:
        url = server.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
        capped = asyncio.run(session(url, talk, max_speakers=2))
    finally:
        server.stop()
    [updated] = [event for event in capped if event["type"] == "session.updated"]
    assert updated["session"]["audio"]["input"]["transcription"]["max_speakers"] == 2
    assert {segment.speaker for segment in segments(capped)} == {"A", "B"}
