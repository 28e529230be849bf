"""The Wyoming port of `server.py`, driven with the `wyoming` library's client as Home
Assistant drives it, in front of the stand-in vLLM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong

from qwen3_asr_server.model.languages import SUPPORTED
from tests.fixtures.process import listening, workers
from tests.fixtures.wyoming import READ_TIMEOUT, Wyoming, answer, send_command, start_wyoming, tone


@pytest.fixture(scope="module")
def wyoming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wyoming]:
    env = {"FAKE_VLLM_DESCRIBE": "1", "FAKE_VLLM_PIECE_DELAY": "0.05"}
    started = start_wyoming(tmp_path_factory.mktemp("wyoming"), env, "--log-transcripts")
    yield started
    started.server.stop()


async def test_describe_answers_one_asr_program_with_every_language(wyoming: Wyoming) -> None:
    async with wyoming.client() as client:
        await client.write_event(Describe().event())
        event = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
    assert event is not None
    info = Info.from_event(event)
    [program] = info.asr
    assert program.supports_transcript_streaming
    assert not program.requires_external_vad  # the server hears where a command ends
    assert program.version
    [model] = program.models
    assert model.name == "tiny"
    assert model.languages == [language.code for language in SUPPORTED]
    assert {"en", "yue", "fil"} <= set(model.languages)


async def test_ping_is_answered_with_pong(wyoming: Wyoming) -> None:
    async with wyoming.client() as client:
        await client.write_event(Ping(text="hi").event())
        event = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
    assert event is not None
    assert Pong.from_event(event).text == "hi"


async def test_a_command_streams_its_text_then_the_transcript(wyoming: Wyoming) -> None:
    before = wyoming.counted("ok")
    transcriptions = 'qwen3_asr_transcriptions_total{protocol="wyoming"}'
    audio = 'qwen3_asr_audio_seconds_total{protocol="wyoming"}'
    counted = wyoming.metric(transcriptions), wyoming.metric(audio)
    async with wyoming.client() as client:
        await send_command(client, tone(1.0))
        events = await answer(client)
    types = [event.type for event in events]
    assert types[0] == TranscriptStart().event().type
    assert types[-2:] == ["transcript-stop", "transcript"]
    chunks = [TranscriptChunk.from_event(e).text for e in events if TranscriptChunk.is_type(e.type)]
    assert len(chunks) > 1  # as vLLM wrote it, not all at once
    final = Transcript.from_event(events[-1])
    assert final.text == "".join(chunks) == "Hello world."  # the stand-in's, told English
    assert final.language == "en"
    assert wyoming.counted("ok") == before + 1
    # counted with the HTTP API's transcriptions, labelled by protocol
    assert wyoming.metric(transcriptions) == counted[0] + 1
    assert wyoming.metric(audio) == pytest.approx(counted[1] + 1.0)
    # its text in the log (--log-transcripts), under the request id its command is logged with:
    # both written by the time /metrics counts it (one event loop serves the port and /metrics)
    log = wyoming.server.output()
    [*_, said] = re.findall(r'request_id=(\w+) transcript="Hello world\."', log)
    assert f"wyoming command request_id={said} outcome=ok" in log


async def test_22khz_stereo_is_converted_to_16khz_mono(wyoming: Wyoming) -> None:
    async with wyoming.client() as client:
        pcm = tone(2.0, rate=22050, channels=2)
        await send_command(client, pcm, rate=22050, channels=2, language=None)
        events = await answer(client)
    final = Transcript.from_event(events[-1])
    assert final.text == "Heard 2.00 s."  # the stand-in hears the length it was sent
    assert final.language == "en"  # as the model named it


async def test_audio_without_transcribe_is_transcribed_with_the_language_detected(
    wyoming: Wyoming,
) -> None:
    async with wyoming.client() as client:
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await client.write_event(AudioChunk(16000, 2, 1, tone(0.5)).event())
        await client.write_event(AudioStop().event())
        events = await answer(client)
        # the connection stays open for another command
        await send_command(client, tone(1.0), language="en-US")
        again = await answer(client)
    assert Transcript.from_event(events[-1]).text == "Heard 0.50 s."
    assert Transcript.from_event(again[-1]).text == "Hello world."


async def test_no_audio_is_an_empty_transcript(wyoming: Wyoming) -> None:
    async with wyoming.client() as client:
        await send_command(client, b"")
        events = await answer(client)
    assert [event.type for event in events] == ["transcript"]
    assert Transcript.from_event(events[0]).text == ""


@pytest.mark.parametrize(
    ("events", "code"),
    [
        ([AudioChunk(16000, 2, 1, b"\0\0\0").event()], "bad-audio"),
        ([AudioChunk(16000, 2, 2, b"\0\0").event()], "bad-audio"),
        ([AudioChunk(16000, 3, 1, b"\0\0\0").event()], "unsupported-audio"),
        ([Event("audio-chunk", {"rate": "fast"}, b"\0\0")], "bad-event"),
        ([Transcribe(language="klingon").event()], "unsupported-language"),
        ([Transcribe(name="no-such-model").event()], "model-not-found"),
    ],
)
async def test_bad_events_are_an_error_and_the_command_is_dropped(
    wyoming: Wyoming, events: list[Event], code: str
) -> None:
    before = wyoming.counted("invalid")
    async with wyoming.client() as client:
        for event in events:
            await client.write_event(event)
        error = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
        # the rest of the refused command is dropped, and the connection serves the next
        await client.write_event(AudioChunk(16000, 2, 1, tone(0.5)).event())
        await client.write_event(AudioStop().event())
        await send_command(client, tone(1.0), language=None)
        after = await answer(client)
    assert error is not None
    assert Error.from_event(error).code == code
    assert [event.type for event in after][-1] == "transcript"
    assert Transcript.from_event(after[-1]).text == "Heard 1.00 s."  # only the new command's
    assert wyoming.counted("invalid") == before + 1


async def test_an_event_longer_than_its_bound_closes_the_connection(wyoming: Wyoming) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", wyoming.port)
    header = b'{"type": "audio-chunk", "data": {"rate": 16000, "width": 2, "channels": 1}, '
    writer.write(header + b'"payload_length": 1073741824}\n')
    await writer.drain()
    error = await asyncio.wait_for(async_read_event(reader), READ_TIMEOUT)
    assert error is not None
    assert Error.from_event(error).code == "event-too-large"
    assert await asyncio.wait_for(reader.read(), READ_TIMEOUT) == b""  # closed, not waiting
    writer.close()
    async with wyoming.client() as client:  # and the server goes on
        await client.write_event(Describe().event())
        assert await asyncio.wait_for(client.read_event(), READ_TIMEOUT) is not None


async def test_too_much_audio_is_refused(wyoming: Wyoming) -> None:
    six_minutes = tone(360.0, rate=4000)  # over the 5 a command may hold, in one chunk
    async with wyoming.client() as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioChunk(4000, 2, 1, six_minutes).event())
        error = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
    assert error is not None
    assert Error.from_event(error).code == "audio-too-long"


async def test_a_client_leaving_mid_command_leaves_nothing_behind(wyoming: Wyoming) -> None:
    before = wyoming.counted("gone")
    async with wyoming.client() as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioChunk(16000, 2, 1, tone(0.5)).event())
    deadline = time.monotonic() + 10
    while wyoming.counted("gone") != before + 1:
        assert time.monotonic() < deadline, "the command was never closed"
        await asyncio.sleep(0.05)
    # the drain's count is back to zero: a SIGTERM now ends the server at once (below), and
    # the server still answers
    async with wyoming.client() as client:
        await send_command(client, tone(1.0), language=None)
        assert Transcript.from_event((await answer(client))[-1]).text == "Heard 1.00 s."


async def test_a_busy_server_answers_with_an_error(tmp_path: Path) -> None:
    env = {"FAKE_VLLM_RESPONSE_DELAY": "2"}
    wyoming = start_wyoming(tmp_path, env, "--max-concurrent", "1", "--max-queue", "0")
    try:
        async with wyoming.client() as first, wyoming.client() as second:
            await send_command(first, tone(1.0))
            await asyncio.sleep(0.5)  # the first holds the only slot
            await send_command(second, tone(1.0))
            refused = await answer(second)
            done = await answer(first)
        assert Error.is_type(refused[-1].type)
        assert Error.from_event(refused[-1]).code == "rate_limit_exceeded"  # the HTTP 429's
        assert Transcript.is_type(done[-1].type)
        assert wyoming.counted("busy") == 1
    finally:
        wyoming.server.stop()


async def test_a_command_sent_as_vllm_dies_is_an_error_at_once(tmp_path: Path) -> None:
    """Nothing of the command is answered when vLLM goes, so it is not kept waiting for
    vLLM's restart (it used to be, and then transcribed): an error, and the next command
    on the same connection is served once vLLM is back."""
    wyoming = start_wyoming(tmp_path, {})
    try:
        async with wyoming.client() as client:
            os.kill(wyoming.server.starts()[-1]["pid"], signal.SIGKILL)  # restarted
            started = time.monotonic()
            await send_command(client, tone(1.0))
            refused = await answer(client)
            seconds = time.monotonic() - started
            assert Error.is_type(refused[-1].type), refused
            assert Error.from_event(refused[-1]).code == "backend_unavailable"
            assert seconds < 10
            wyoming.server.wait_for_health(503)  # the supervisor sees it gone,
            wyoming.server.wait_for_health(200)  # and back
            await send_command(client, tone(1.0))
            served = await answer(client)
        assert Transcript.is_type(served[-1].type)
        assert wyoming.counted("busy") == 1
        print(f"error after {seconds:.2f} s")
    finally:
        wyoming.server.stop()


async def test_sigterm_lets_a_command_in_flight_finish(tmp_path: Path) -> None:
    env = {"FAKE_VLLM_RESPONSE_DELAY": "1.5"}
    wyoming = start_wyoming(tmp_path, env)
    try:
        async with wyoming.client() as client, wyoming.client() as late:
            await send_command(client, tone(1.0))
            await asyncio.sleep(0.3)
            wyoming.server.proc.terminate()
            await asyncio.sleep(0.3)
            await send_command(late, tone(1.0))  # a new command while the server drains
            refused = await answer(late)
            events = await answer(client)
        assert Error.from_event(refused[-1]).code == "server-shutting-down"
        assert Transcript.is_type(events[-1].type)
        assert wyoming.server.wait_exit() == -signal.SIGTERM  # raised again, as uvicorn does
        with contextlib.suppress(OSError):  # the port is closed with the server
            async with wyoming.client() as client:
                await client.write_event(Describe().event())
                pytest.fail("the Wyoming port still accepts")
    finally:
        wyoming.server.stop()


async def test_every_worker_serves_the_port(tmp_path: Path) -> None:
    wyoming = start_wyoming(tmp_path, {}, "--workers", "2")
    try:
        deadline = time.monotonic() + 15
        pid = wyoming.server.proc.pid
        while len(workers(pid)) < 2 or listening(wyoming.port) != workers(pid):
            assert time.monotonic() < deadline, "the workers never all listened on the port"
            await asyncio.sleep(0.1)

        async def one() -> Event:
            async with wyoming.client() as client:
                await send_command(client, tone(1.0))
                return (await answer(client))[-1]

        answers = await asyncio.gather(*(one() for _ in range(6)))
        assert [Transcript.from_event(each).text for each in answers] == ["Hello world."] * 6
        assert wyoming.counted("ok") == 6  # summed over the workers
    finally:
        wyoming.server.stop()
