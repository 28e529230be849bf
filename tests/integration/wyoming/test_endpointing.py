"""Server-side endpointing through `server.py`: satellites that stream espeak-ng speech and
never send `audio-stop` get their transcript when the server hears the command end. The
stand-in vLLM, asked for no language, answers with the length it heard ("Heard 3.20 s."):
where the command was cut, as the user sees it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptStart
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong

from qwen3_asr_server.entrypoints.wyoming.endpoint import MAX_SPEECH_SECONDS, QUIET_SECONDS
from tests.fixtures.speech import noise_only, spoken_pcm
from tests.fixtures.wyoming import (
    READ_TIMEOUT,
    Wyoming,
    answer,
    send_command,
    start_wyoming,
    tone,
)

RATE = 16_000
TOLERANCE = 0.3  # seconds Silero may hear an edge of speech from where it was put


@pytest.fixture(scope="module")
def wyoming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wyoming]:
    started = start_wyoming(tmp_path_factory.mktemp("endpointing"), {"FAKE_VLLM_DESCRIBE": "1"})
    yield started
    started.server.stop()


def speech(pattern: Sequence[tuple[float, bool]]) -> bytes:
    """(seconds, voiced) pieces of espeak-ng's voice and silence, as 16 kHz PCM."""
    return spoken_pcm(pattern, rate=RATE)


async def stream(client: AsyncTcpClient, pcm: bytes, sensitivity: str | None = None) -> None:
    """A command as a satellite streams it, in 100 ms chunks, and no `audio-stop`."""
    await client.write_event(Transcribe(vad_sensitivity=sensitivity).event())
    await client.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
    await chunks(client, pcm)


async def chunks(client: AsyncTcpClient, pcm: bytes) -> None:
    step = RATE * 2 // 10
    for start in range(0, len(pcm), step):
        await client.write_event(AudioChunk(RATE, 2, 1, pcm[start : start + step]).event())


def heard(events: list[Event]) -> float:
    """The seconds of audio the command was transcribed with (the stand-in's answer)."""
    text = Transcript.from_event(events[-1]).text
    return float(text.removeprefix("Heard ").removesuffix(" s."))


@pytest.mark.parametrize(
    "then",
    [
        [AudioStop().event()],
        [],  # the next command's transcribe
        [AudioStart(rate=RATE, width=2, channels=1).event()],
    ],
    ids=["audio-stop", "transcribe", "audio-start"],
)
async def test_a_satellite_that_never_stops_is_answered_after_its_pause(
    wyoming: Wyoming, then: list[Event]
) -> None:
    before = wyoming.counted("ok")
    async with wyoming.client() as client:
        await stream(client, speech([(0.5, False), (2.5, True), (3.0, False)]))
        events = await answer(client)  # no audio-stop was sent: the pause ended it
        # the satellite streams on until it reads the transcript, then stops: dropped
        await chunks(client, bytes(RATE))
        for event in then:
            await client.write_event(event)
        await send_command(client, tone(1.0), language=None)
        after = await answer(client)
    assert TranscriptStart.is_type(events[0].type)
    assert [event.type for event in events][-2:] == ["transcript-stop", "transcript"]
    assert abs(heard(events) - (3.0 + 0.7)) <= TOLERANCE  # the default 0.7 s pause
    assert TranscriptStart.is_type(after[0].type)  # no error for the dropped tail
    assert heard(after) == 1.0  # only the next command's audio
    assert wyoming.counted("ok") == before + 2


async def test_a_satellite_that_never_pauses_is_answered_at_the_bound(wyoming: Wyoming) -> None:
    async with wyoming.client() as client:
        await stream(client, speech([(MAX_SPEECH_SECONDS + 3, True)]))
        events = await answer(client)
        await client.write_event(AudioStop().event())
        await client.write_event(Ping(text="still there").event())
        pong = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
    assert abs(heard(events) - MAX_SPEECH_SECONDS) <= TOLERANCE
    assert pong is not None
    assert Pong.from_event(pong).text == "still there"


async def test_a_command_without_speech_ends_at_the_quiet_bound(wyoming: Wyoming) -> None:
    async with wyoming.client() as client:
        await stream(client, noise_only(QUIET_SECONDS + 2, -40).astype("<i2").tobytes())
        events = await answer(client)
    assert heard(events) == QUIET_SECONDS  # a room's hiss, never speech


@pytest.mark.parametrize(
    ("sensitivity", "ends_in_pause"), [("aggressive", True), ("relaxed", False)]
)
async def test_the_sensitivity_decides_whether_a_short_pause_ends_the_command(
    wyoming: Wyoming, sensitivity: str, ends_in_pause: bool
) -> None:
    # a pause longer than aggressive's 0.25 s and shorter than relaxed's 1.25 s
    pattern = [(0.5, False), (2.0, True), (0.7, False), (2.0, True), (2.0, False)]
    async with wyoming.client() as client:
        await stream(client, speech(pattern), sensitivity)
        events = await answer(client)
    assert (heard(events) < 0.5 + 2.0 + 0.7) is ends_in_pause


async def test_without_endpointing_a_command_ends_at_audio_stop_only(tmp_path: Path) -> None:
    """--no-wyoming-endpointing: a recording with a long pause is transcribed whole, and
    `info` asks for the client's VAD."""
    env = {"FAKE_VLLM_DESCRIBE": "1"}
    wyoming = start_wyoming(tmp_path, env, "--no-wyoming-endpointing")
    try:
        async with wyoming.client() as client:
            await client.write_event(Describe().event())
            described = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
            pcm = speech([(0.5, False), (2.0, True), (3.0, False), (2.0, True), (0.5, False)])
            await stream(client, pcm)
            await client.write_event(AudioStop().event())
            events = await answer(client)
    finally:
        wyoming.server.stop()
    assert described is not None
    [program] = Info.from_event(described).asr
    assert program.requires_external_vad
    assert heard(events) == pytest.approx(len(pcm) / 2 / RATE, abs=0.01)
