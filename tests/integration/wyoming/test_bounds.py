"""What a client of the Wyoming port can hold, with no authentication to stop it: connections
(--wyoming-max-connections, over every worker), time (--wyoming-idle-timeout,
--wyoming-event-timeout) and audio (--wyoming-max-audio-seconds, endpointing or not)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart
from wyoming.error import Error
from wyoming.event import async_read_event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong

from tests.fixtures.process import memory
from tests.fixtures.wyoming import READ_TIMEOUT, Wyoming, start_wyoming, tone

IDLE = 1.5  # --wyoming-idle-timeout here
EVENT = 1.0  # --wyoming-event-timeout here
MAX_AUDIO = 5.0  # --wyoming-max-audio-seconds here


@pytest.fixture(scope="module")
def wyoming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wyoming]:
    started = start_wyoming(
        tmp_path_factory.mktemp("bounds"),
        {},
        "--wyoming-idle-timeout",
        str(IDLE),
        "--wyoming-event-timeout",
        str(EVENT),
        "--wyoming-max-audio-seconds",
        str(MAX_AUDIO),
        "--no-wyoming-endpointing",
    )
    yield started
    started.server.stop()


async def _closed(reader: asyncio.StreamReader, within: float) -> bool:
    """Whether the server closes the connection within `within` seconds (what it sent
    before is read and dropped)."""
    try:
        async with asyncio.timeout(within):
            while await reader.read(65536):
                pass
    except (TimeoutError, ConnectionError):
        return False
    return True


async def _health(url: str) -> int:
    async with httpx.AsyncClient(timeout=10) as client:
        return (await client.get(f"{url}/health")).status_code


@pytest.mark.parametrize("workers", [1, 2])
async def test_300_idle_connections_under_256_descriptors_leave_the_api_serving(
    tmp_path: Path, workers: int
) -> None:
    cap = 48
    wyoming = start_wyoming(
        tmp_path,
        {},
        "--wyoming-max-connections",
        str(cap),
        "--workers",
        str(workers),
        max_files=256,
    )
    connections: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for _ in range(300):
            connections.append(await asyncio.open_connection("127.0.0.1", wyoming.port))
        closed = await asyncio.gather(*(_closed(reader, 5.0) for reader, _ in connections))
        assert closed.count(False) == cap  # held open: over every worker together
        assert closed.count(True) == 300 - cap  # closed at once
        assert await _health(wyoming.server.url) == 200  # the HTTP API answers meanwhile
        refused = 'qwen3_asr_rejected_total{reason="wyoming_connection_limit"}'
        assert wyoming.metric(refused) == 300 - cap
        assert wyoming.metric("qwen3_asr_wyoming_connections") == cap
        for _, writer in connections:
            writer.close()
        deadline = time.monotonic() + 15
        while wyoming.metric("qwen3_asr_wyoming_connections") != 0:  # each seat given back
            assert time.monotonic() < deadline, "the seats were never given back"
            await asyncio.sleep(0.1)
        async with wyoming.client() as client:  # and the port serves again
            await client.write_event(Describe().event())
            assert await asyncio.wait_for(client.read_event(), READ_TIMEOUT) is not None
        log = wyoming.server.output()
        assert "Traceback" not in log
        assert log.count("Wyoming connections refused") <= workers  # once, not 252 times
    finally:
        for _, writer in connections:
            writer.close()
        wyoming.server.stop()


async def test_an_idle_connection_is_closed_and_a_talking_one_is_not(wyoming: Wyoming) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", wyoming.port)
    started = time.monotonic()
    async with wyoming.client() as talking:
        for _ in range(int(2 * IDLE / 0.25)):  # an event every 0.25 s, for twice the timeout
            await talking.write_event(Ping().event())
            pong = await asyncio.wait_for(talking.read_event(), READ_TIMEOUT)
            assert pong is not None
            assert Pong.is_type(pong.type)
            await asyncio.sleep(0.25)
    assert await _closed(reader, READ_TIMEOUT)
    assert time.monotonic() - started >= IDLE - 0.1
    writer.close()
    assert "no event in 1.5 s" in wyoming.server.output()


@pytest.mark.parametrize(
    "begun",
    [
        b'{"type": "audio-chunk", "data": {"rate": 16000, "width": 2, "channels": 1}, '
        b'"payload_length": 3200}\n' + bytes(100),  # its payload stalled
        b'{"type": "describe", ',  # its header line stalled
    ],
)
async def test_an_event_begun_and_not_finished_in_time_closes_the_connection(
    wyoming: Wyoming, begun: bytes
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", wyoming.port)
    started = time.monotonic()
    writer.write(begun)
    await writer.drain()
    error = await asyncio.wait_for(async_read_event(reader), READ_TIMEOUT)
    assert time.monotonic() - started >= EVENT - 0.1
    assert error is not None
    assert Error.from_event(error).code == "event-timeout"
    assert await _closed(reader, READ_TIMEOUT)
    writer.close()


async def test_a_flood_of_never_ending_commands_stays_under_the_audio_cap(
    wyoming: Wyoming,
) -> None:
    count, seconds = 12, 120  # each: 2 minutes of audio, and no audio-stop
    second = tone(1.0)
    before = wyoming.counted("invalid")
    pid = wyoming.server.proc.pid
    async with wyoming.client() as warm:  # the resampler's first use, out of the figure
        await warm.write_event(Transcribe(language="en").event())
        await warm.write_event(AudioChunk(16000, 2, 1, second).event())
    rss = memory(pid, "VmRSS")
    clients = [wyoming.client() for _ in range(count)]

    async def stream(index: int) -> None:
        client = clients[index]
        await client.connect()
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(16000, 2, 1).event())
        for _ in range(seconds):
            await client.write_event(AudioChunk(16000, 2, 1, second).event())

    try:
        await asyncio.gather(*(stream(index) for index in range(count)))
        errors = [await asyncio.wait_for(client.read_event(), READ_TIMEOUT) for client in clients]
        held = memory(pid, "VmRSS") - rss  # while every connection is still open
    finally:
        for client in clients:
            await client.disconnect()
    assert None not in errors
    assert {Error.from_event(error).code for error in errors if error} == {"audio-too-long"}
    assert wyoming.counted("invalid") == before + count
    # had they been held: 12 x 2 min x 32 kB/s = 46 MB
    assert held < 16 << 20, f"{held / 2**20:.1f} MiB held"
    print(f"RSS +{held / 2**20:.1f} MiB for {count} x {seconds} s sent")
