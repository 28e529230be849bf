"""Turns that end sooner: an utterance is transcribed from its first pause on, and that
transcription is kept when the turn ends there, or cancelled when speech resumes first.
Driven over the WebSocket against the stand-in, which says how long the audio it heard was."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
from websockets.asyncio.client import ClientConnection

from tests.fixtures import metrics
from tests.fixtures.harness import MODEL
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.standin import StandIn
from tests.integration.realtime.test_realtime import (
    TRANSCRIPTION,
    completed,
    heard,
    of,
    send,
    serving,
    session,
    stream,
    until,
)

# One turn: 1.5 s of speech, a 0.5 s pause (shorter than the 1 s window), 0.8 s more, silence.
# Silero hears the speech stop at 2.016 s and at 3.296 s, and nowhere else in it.
TURN = [(0.5, False), (1.5, True), (0.5, False), (0.8, True), (1.5, False)]
PAUSED = round(2.5 * 24_000) * 2  # bytes of 24 kHz PCM up to the end of the pause
# Where the utterance's audio starts (300 ms before the speech) and ends (150 ms after it), in
# 16 kHz samples: for the whole turn, and for its part up to the pause
START, FIRST_END, WHOLE_END = 3904, 32256 + 2400, 52736 + 2400
FIRST_PART, WHOLE = (FIRST_END - START) / 16_000, (WHOLE_END - START) / 16_000


async def windowed(ws: ClientConnection) -> None:
    """Server VAD with a 1 s silence window."""
    vad = {"type": "server_vad", "silence_duration_ms": 1000}
    audio = {"input": {"turn_detection": vad}}
    await send(ws, "session.update", session={"type": "transcription", "audio": audio})
    await until(ws, lambda events: any(e["type"] == "session.updated" for e in events))


async def speculations(url: str) -> dict[str, float]:
    async with httpx.AsyncClient() as http:
        text = (await http.get(url.replace("ws://", "http://") + "/metrics")).text
    return metrics.by_label(text, "qwen3_asr_realtime_speculations_total", "outcome")


async def until_true(check: Callable[[], object], seconds: float = 10) -> None:
    """Until `check()` holds, polled: it reads the stand-in, which runs in another thread."""
    async with asyncio.timeout(seconds):
        while not check():  # noqa: ASYNC110 (no event crosses the threads)
            await asyncio.sleep(0.02)


async def test_a_turn_that_ends_at_its_pause_is_transcribed_once() -> None:
    standin = StandIn(MODEL, describe=True)
    with serving(standin) as url:
        async with session(url) as ws:
            await windowed(ws)
            await stream(ws, spoken_pcm([(0.5, False), (1.5, True), (1.5, False)]))
            events = await until(ws, completed(1))
        counted = await speculations(url)
    [done] = of(events, TRANSCRIPTION + "completed")
    [stopped] = of(events, "input_audio_buffer.speech_stopped")
    # the transcription started at the pause was the utterance's: the model was asked once,
    # for exactly the audio the commit cut
    assert len(standin.requests) == 1
    assert heard([done["transcript"]]) == [round(FIRST_PART, 2)]
    assert standin.requests[0]["audio"]["seconds"] == FIRST_PART
    assert stopped["audio_end_ms"] == FIRST_END * 1000 // 16_000
    assert counted == {"started": 1.0, "kept": 1.0, "dropped": 0.0}
    deltas = [e["delta"] for e in of(events, TRANSCRIPTION + "delta")]
    assert "".join(deltas) == done["transcript"]  # the held deltas went out, in order
    kinds = [e["type"] for e in events]
    assert kinds.index("input_audio_buffer.committed") < kinds.index(TRANSCRIPTION + "delta")


async def test_speech_after_a_short_pause_cancels_its_transcription() -> None:
    # each answer streams slowly, so the first is still being written when speech resumes
    standin = StandIn(MODEL, describe=True, piece_delay=0.5)
    pcm = spoken_pcm(TURN)
    with serving(standin) as url:
        async with session(url) as ws:
            await windowed(ws)
            await stream(ws, pcm[:PAUSED])
            await until_true(lambda: standin.requests)  # the part so far went upstream
            await stream(ws, pcm[PAUSED:])
            events = await until(ws, completed(1), seconds=30)
            await until_true(lambda: standin.streams_broken)  # the first was cancelled
        counted = await speculations(url)
    # one turn, one transcription of all of it; the part before the pause was asked for,
    # then the whole, and nothing of the first answer reached the client
    [done] = of(events, TRANSCRIPTION + "completed")
    assert len(of(events, "input_audio_buffer.committed")) == 1
    assert heard([done["transcript"]]) == [round(WHOLE, 2)]
    assert [r["audio"]["seconds"] for r in standin.requests] == [FIRST_PART, WHOLE]
    deltas = [e["delta"] for e in of(events, TRANSCRIPTION + "delta")]
    assert "".join(deltas) == done["transcript"]
    assert standin.streams_broken == 1
    assert counted == {"started": 2.0, "kept": 1.0, "dropped": 1.0}
