"""`--idle-sleep` where a use is more than one request: across `--workers N` (one engine, one
sleeper, many doors), an open Realtime session (it wakes the engine and keeps it awake) and a
Wyoming command; each through a server process before the stand-in vLLM's sleep mode."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event

from tests.fixtures import metrics
from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.wyoming import answer, start_wyoming, tone
from tests.integration.realtime.test_realtime import TRANSCRIPTION, completed, of, session
from tests.integration.realtime.test_realtime import stream as stream_audio
from tests.integration.realtime.test_realtime import until as events_until
from tests.integration.sleep.conftest import sleep_log, transcribe
from tests.integration.test_workers import ACCESS, two_workers

ASLEEP_AT_ONCE = 8  # requests sent while the engine wakes (FAKE_VLLM_WAKE_SECONDS=2)


def until(condition: Callable[[], bool], what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


async def eventually(condition: Callable[[], bool], what: str, seconds: float = 20) -> None:
    """`until` for a test on an event loop: it looks again without blocking the loop."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


def health(server: ServerProcess) -> str:
    """The status of /health (on a new connection: with workers, any of them answers)."""
    reply = httpx.get(f"{server.url}/health", timeout=5)
    assert reply.status_code == 200, reply.text  # sleeping or not, the server is healthy
    return str(reply.json()["status"])


def counted(server: ServerProcess) -> dict[str, float]:
    """The asr backend's sleep and wake counts on /metrics."""
    page = httpx.get(f"{server.url}/metrics", timeout=5).text
    return {
        name: metrics.by_label(page, f"qwen3_asr_backend_{name}_total", "backend")["asr"]
        for name in ("sleeps", "wakes")
    }


def while_it_wakes(server: ServerProcess) -> list[httpx.Response]:
    """ASLEEP_AT_ONCE transcriptions, 0.15 s apart, all sent before a 2 s wake ends."""
    with ThreadPoolExecutor(ASLEEP_AT_ONCE) as pool:
        pending = []
        for _ in range(ASLEEP_AT_ONCE):
            pending.append(pool.submit(transcribe, server))
            time.sleep(0.15)
        return [each.result() for each in pending]


def served_by(server: ServerProcess, since: int) -> set[int]:
    """The workers that answered transcriptions after the log's first `since` characters."""
    return {int(match.group(1)) for match in ACCESS.finditer(server.output()[since:])}


def test_with_two_workers_the_engine_sleeps_once_and_wakes_once_for_all(
    run_server, tmp_path: Path
) -> None:
    server = run_server("--workers", "2", "--idle-sleep", "0.5", FAKE_VLLM_WAKE_SECONDS="2")
    server.wait_for_health(200)
    two_workers(server)
    until(lambda: health(server) == "sleeping", "/health said sleeping")
    assert {health(server) for _ in range(6)} == {"sleeping"}  # whichever worker answers
    assert sleep_log(tmp_path) == ["sleep 1"]
    cycles, both = 0, False
    while not both:  # until requests of both workers waited for one wake together
        cycles += 1
        assert cycles <= 4, "one worker took every connection"
        until(lambda: health(server) == "sleeping", "/health said sleeping again")
        logged = len(server.output())
        replies = while_it_wakes(server)
        both = len(served_by(server, logged)) == 2
        assert [reply.status_code for reply in replies] == [200] * ASLEEP_AT_ONCE
        assert [reply.json()["text"] for reply in replies] == ["Hello world."] * ASLEEP_AT_ONCE
        assert sleep_log(tmp_path).count("wake_up") == cycles  # one wake for them all
    until(lambda: health(server) == "sleeping", "/health said sleeping after the last wake")
    assert sleep_log(tmp_path) == ["sleep 1", "wake_up"] * cycles + ["sleep 1"]
    for _ in range(6):  # the main process's counts, read through the table by any worker
        assert counted(server) == {"sleeps": cycles + 1, "wakes": cycles}
    assert len(server.starts()) == 1  # asleep, never stopped


async def test_a_realtime_session_wakes_the_engine_and_keeps_it_awake(
    run_server, tmp_path: Path
) -> None:
    server = run_server("--idle-sleep", "0.5")
    server.wait_for_health(200)
    await eventually(lambda: health(server) == "sleeping", "/health said sleeping")
    url = server.url.replace("http://", "ws://")
    async with session(url) as ws:
        await eventually(
            lambda: "wake_up" in sleep_log(tmp_path), "the open session woke the engine", 10
        )
        assert sleep_log(tmp_path) == ["sleep 1", "wake_up"]  # before any audio
        await eventually(lambda: health(server) == "ok", "/health said ok")
        held = time.monotonic() + 2.0  # four idle-sleep periods with no audio
        while time.monotonic() < held:
            assert health(server) == "ok"
            await asyncio.sleep(0.1)
        assert counted(server) == {"sleeps": 1, "wakes": 1}
        await stream_audio(ws, spoken_pcm([(0.5, False), (1.5, True), (1.5, False)]))
        events = await events_until(ws, completed(1), seconds=20)
    assert [e["transcript"] for e in of(events, TRANSCRIPTION + "completed")] == ["Hello world."]
    await eventually(
        lambda: health(server) == "sleeping", "the engine slept after the session closed"
    )
    assert sleep_log(tmp_path) == ["sleep 1", "wake_up", "sleep 1"]  # nothing refused
    assert counted(server) == {"sleeps": 2, "wakes": 1}


async def test_a_wyoming_command_wakes_a_sleeping_engine_while_its_audio_comes(
    tmp_path: Path,
) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    env = {"FAKE_VLLM_SLEEP_LOG": str(tmp_path / "sleep.log"), "FAKE_VLLM_WAKE_SECONDS": "1"}
    wyoming = start_wyoming(tmp_path, env, "--idle-sleep", "0.5")
    try:
        await eventually(lambda: health(wyoming.server) == "sleeping", "/health said sleeping")
        async with wyoming.client() as client:
            await client.write_event(Transcribe(language="en").event())
            await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            audio = tone(1.0)
            await client.write_event(chunk(audio[:3200]))
            await eventually(lambda: "wake_up" in sleep_log(tmp_path), "the command woke it", 10)
            await client.write_event(chunk(audio[3200:]))  # the rest, once it is awake
            await client.write_event(AudioStop().event())
            events = await answer(client)
        assert Transcript.from_event(events[-1]).text == "Hello world."
        assert sleep_log(tmp_path)[:2] == ["sleep 1", "wake_up"]
        assert not [line for line in sleep_log(tmp_path) if line.startswith("refused")]
        assert counted(wyoming.server)["wakes"] == 1
    finally:
        wyoming.server.stop()


def chunk(pcm: bytes) -> Event:
    return AudioChunk(rate=16000, width=2, channels=1, audio=pcm).event()
