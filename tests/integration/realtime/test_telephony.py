"""A phone line into /v1/realtime: G.711 audio as Twilio Media Streams deliver it, and
server VAD's idle timeout, which commits a silence no one broke."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from openai.types.realtime import InputAudioBufferTimeoutTriggered, SessionUpdatedEvent
from websockets.asyncio.client import ClientConnection

from tests.fixtures.harness import MODEL
from tests.fixtures.speech import spoken_g711, spoken_pcm
from tests.fixtures.standin import StandIn
from tests.fixtures.websocket import connect
from tests.integration.realtime.test_realtime import (
    PATTERN,
    TRANSCRIPTION,
    Events,
    completed,
    heard,
    of,
    send,
    serving,
    session,
    stream,
    until,
)

FRAME = 160  # bytes of one Twilio media message: 20 ms of 8 kHz G.711
TIMEOUT = "input_audio_buffer.timeout_triggered"


async def configure(ws: ClientConnection, **audio_input: Any) -> dict[str, Any]:
    """A GA session.update of `audio_input`; the one event that answers it."""
    audio = {"input": audio_input}
    await send(ws, "session.update", session={"type": "transcription", "audio": audio})
    [answer] = await until(ws, lambda events: len(events) == 1)
    return answer


async def phone(ws: ClientConnection, data: bytes) -> None:
    """`data` in 20 ms frames, each its own append, as a Twilio stream's media messages."""
    for start in range(0, len(data), FRAME):
        chunk = base64.b64encode(data[start : start + FRAME]).decode()
        await send(ws, "input_audio_buffer.append", audio=chunk)


async def test_a_twilio_mu_law_stream_is_heard_and_transcribed() -> None:
    standin = StandIn(MODEL, describe=True)
    with serving(standin) as url:
        async with session(url) as ws:
            updated = await configure(ws, format={"type": "audio/pcmu"})
            await phone(ws, spoken_g711(PATTERN[:3], "g711_ulaw"))
            events = await until(ws, completed(1))
    parsed = SessionUpdatedEvent.model_validate(updated)
    assert parsed.session.audio.input.format.type == "audio/pcmu"
    assert "rate" not in updated["session"]["audio"]["input"]["format"]
    # speech at 0.5-2.0 s: found as in 24 kHz PCM, 300 ms prefix and 150 ms tail around it
    [started] = of(events, "input_audio_buffer.speech_started")
    [stopped] = of(events, "input_audio_buffer.speech_stopped")
    assert started["audio_start_ms"] == pytest.approx(200, abs=100)
    assert stopped["audio_end_ms"] == pytest.approx(2150, abs=100)
    [done] = of(events, TRANSCRIPTION + "completed")
    assert done["item_id"] == started["item_id"]
    # the stand-in got the utterance's 16 kHz audio, as long as it was spoken
    assert heard([done["transcript"]]) == pytest.approx([1.95], abs=0.15)
    assert not of(events, "error")


async def test_a_law_with_manual_commits() -> None:
    with serving() as url:
        async with session(url) as ws:
            await configure(ws, format={"type": "audio/pcma", "rate": 8000}, turn_detection=None)
            await phone(ws, spoken_g711([(1.0, True)], "g711_alaw"))
            await send(ws, "input_audio_buffer.commit")
            events = await until(ws, completed(1))
    [done] = of(events, TRANSCRIPTION + "completed")
    assert heard([done["transcript"]]) == pytest.approx([1.0], abs=0.02)


async def test_the_beta_dialect_takes_g711_ulaw() -> None:
    with serving() as url:
        headers = {"OpenAI-Beta": "realtime=v1"}
        async with connect(
            f"{url}/v1/realtime?intent=transcription", additional_headers=headers
        ) as ws:
            await until(ws, lambda events: len(events) == 1)
            await send(ws, "transcription_session.update", session={
                "input_audio_format": "g711_ulaw"})  # fmt: skip
            [updated] = await until(ws, lambda events: len(events) == 1)
            await phone(ws, spoken_g711(PATTERN[:3], "g711_ulaw"))
            events = await until(ws, completed(1))
    assert updated["type"] == "transcription_session.updated"
    assert updated["session"]["input_audio_format"] == "g711_ulaw"
    assert len(of(events, "conversation.item.created")) == 1
    [done] = of(events, TRANSCRIPTION + "completed")
    assert heard([done["transcript"]]) == pytest.approx([1.95], abs=0.15)


async def test_a_g711_rate_other_than_8000_is_an_error_naming_it() -> None:
    with serving() as url:
        async with session(url) as ws:
            refused = await configure(ws, format={"type": "audio/pcmu", "rate": 16000})
    assert refused["type"] == "error"
    assert refused["error"]["code"] == "invalid_value"
    assert refused["error"]["param"] == "session.audio.input.format.rate"


def idle(ms: int | None) -> dict[str, Any]:
    return {"type": "server_vad", "idle_timeout_ms": ms}


def silence(seconds: float, rate: int = 24000) -> bytes:
    return spoken_pcm([(seconds, False)], rate=rate)


def timed_out(events: Events) -> bool:
    return bool(of(events, TIMEOUT)) and completed(1)(events)


async def test_an_idle_timeout_commits_the_silence_and_transcribes_it_empty() -> None:
    standin = StandIn(MODEL, describe=True)
    with serving(standin) as url:
        async with session(url) as ws:
            # 16 kHz: no resampler, so the stream's position is exactly the audio sent
            pcm = {"type": "audio/pcm", "rate": 16000}
            updated = await configure(ws, format=pcm, turn_detection=idle(5000))
            await stream(ws, silence(4.9, 16000), rate=16000)
            await stream(ws, silence(0.1, 16000), rate=16000)  # the 5th second: the timeout
            first = await until(ws, timed_out)
            # speech, then the timeout counts from where its turn ended
            talk = spoken_pcm([(1.0, True), (6.0, False)], rate=16000)
            await stream(ws, talk, rate=16000)
            second = await until(ws, lambda events: timed_out(events) and completed(2)(events))
    assert updated["session"]["audio"]["input"]["turn_detection"]["idle_timeout_ms"] == 5000
    [timeout] = of(first, TIMEOUT)
    parsed = InputAudioBufferTimeoutTriggered.model_validate(timeout)
    assert (parsed.audio_start_ms, parsed.audio_end_ms) == (0, 5000)
    item = parsed.item_id
    mine = [e["type"] for e in first if item in (e.get("item_id"), e.get("item", {}).get("id"))]
    assert mine == [
        TIMEOUT,
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        TRANSCRIPTION + "completed",
    ]
    [done] = of(first, TRANSCRIPTION + "completed")
    assert done["transcript"] == ""
    # silence never went to the model: the one request it got was the speech
    assert len(standin.requests) == 1
    [stopped] = of(second, "input_audio_buffer.speech_stopped")
    [again] = of(second, TIMEOUT)
    assert again["audio_start_ms"] == stopped["audio_end_ms"]
    assert again["audio_end_ms"] - again["audio_start_ms"] == pytest.approx(5000, abs=100)


async def test_no_idle_timeout_unless_asked_and_null_turns_it_off() -> None:
    with serving() as url:
        async with session(url) as ws:
            await stream(ws, silence(6.0))  # the default: no idle timeout
            await configure(ws, turn_detection=idle(5000))
            off = await configure(ws, turn_detection=idle(None))
            await stream(ws, silence(6.0))
            await send(ws, "input_audio_buffer.clear")
            events = await until(ws, lambda events: bool(of(events, "input_audio_buffer.cleared")))
            refused = await configure(ws, turn_detection=idle(4999))
    assert off["session"]["audio"]["input"]["turn_detection"]["idle_timeout_ms"] is None
    assert [e["type"] for e in events] == ["input_audio_buffer.cleared"]  # events come in order
    assert refused["error"]["param"] == "session.audio.input.turn_detection.idle_timeout_ms"
