"""Bad input on the Wyoming port is one line in the log, not a traceback: an `error` event
where the client still reads, then the connection is closed and the server serves on; and a
server stopped with connections open closes them quietly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart
from wyoming.error import Error
from wyoming.event import async_read_event
from wyoming.info import Describe

from tests.fixtures.wyoming import READ_TIMEOUT, Wyoming, start_wyoming, tone

CHUNK = b'{"type": "audio-chunk", "data": {"rate": 16000, "width": 2, "channels": 1}, '


@pytest.fixture(scope="module")
def wyoming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wyoming]:
    started = start_wyoming(tmp_path_factory.mktemp("bad-input"), {})
    yield started
    started.server.stop()


def _lines(wyoming: Wyoming) -> list[str]:
    """The server's log, less the HTTP access lines (the fixture's last /health check may
    be logged after its answer came)."""
    lines = wyoming.server.output().splitlines()
    return [line for line in lines if " qwen3_asr_server.access: " not in line]


async def _new_lines(wyoming: Wyoming, before: int, expected: int) -> list[str]:
    """The log's lines after the first `before`, once `expected` have come (and a moment
    more, for any that would follow them)."""
    deadline = time.monotonic() + READ_TIMEOUT
    while len(_lines(wyoming)) < before + expected:
        assert time.monotonic() < deadline, f"no line in the log: {_lines(wyoming)[before:]}"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    return _lines(wyoming)[before:]


@pytest.mark.parametrize(
    ("sent", "code"),
    [
        (b"[1]\n", "bad-event"),
        (b'{"data": {}}\n', "bad-event"),  # no type
        (b'{"type": "transcribe", "data": {"language": 5}}\n', "bad-event"),
        (b"\xff\xfe\n", "bad-event"),  # not UTF-8
        (b'{"type": "ping", "data_length": "7"}\n', "bad-event"),
        (CHUNK + b'"payload_length": 1073741824}\n', "event-too-large"),
        (b"{" + b" " * ((1 << 16) + 100), "event-too-large"),  # a header line over 64 KiB
        (CHUNK + b'"payload_length": 3200}\n' + bytes(100), None),  # then hangs up
    ],
)
async def test_a_malformed_event_is_one_line_an_error_and_a_close(
    wyoming: Wyoming, sent: bytes, code: str | None
) -> None:
    before = len(_lines(wyoming))
    reader, writer = await asyncio.open_connection("127.0.0.1", wyoming.port)
    writer.write(sent)
    await writer.drain()
    if code is None:  # the client hangs up mid-payload
        writer.close()
    else:
        error = await asyncio.wait_for(async_read_event(reader), READ_TIMEOUT)
        assert error is not None
        assert Error.from_event(error).code == code
        assert await asyncio.wait_for(reader.read(), READ_TIMEOUT) == b""  # then closed
        writer.close()
    lines = await _new_lines(wyoming, before, 1)
    assert len(lines) == 1, lines
    assert "wyoming event refused from 127.0.0.1:" in lines[0]
    assert (" INFO " if code is None else " WARNING ") in lines[0]
    assert "Traceback" not in wyoming.server.output()
    async with wyoming.client() as client:  # the server serves on
        await client.write_event(Describe().event())
        assert await asyncio.wait_for(client.read_event(), READ_TIMEOUT) is not None


async def test_a_flood_of_bad_events_grows_the_log_by_a_line_each(wyoming: Wyoming) -> None:
    before = len(_lines(wyoming))
    size = wyoming.server.log.stat().st_size

    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", wyoming.port)
        writer.write(b"[1]\n")
        await writer.drain()
        await asyncio.wait_for(reader.read(), READ_TIMEOUT)
        writer.close()

    for _ in range(10):  # 200 connections, 20 at once (within --wyoming-max-connections)
        await asyncio.gather(*(one() for _ in range(20)))
    lines = await _new_lines(wyoming, before, 200)
    grown = wyoming.server.log.stat().st_size - size
    assert len(lines) == 200
    assert grown < 200 * 200, f"{grown} bytes"
    print(f"log +{grown} bytes for 200 bad events")


async def test_a_server_stopped_with_connections_open_closes_them_quietly(
    tmp_path: Path,
) -> None:
    wyoming = start_wyoming(tmp_path, {}, "--shutdown-timeout", "1")
    opened = []
    try:
        for _ in range(3):  # idle
            opened.append(await asyncio.open_connection("127.0.0.1", wyoming.port))
        reader, writer = await asyncio.open_connection("127.0.0.1", wyoming.port)
        writer.write(CHUNK + b'"payload_length": 3200}\n')  # an event begun
        opened.append((reader, writer))
        streaming = wyoming.client()  # a command whose audio never stops: the drain waits
        await streaming.connect()
        await streaming.write_event(Transcribe(language="en").event())
        await streaming.write_event(AudioStart(16000, 2, 1).event())
        await streaming.write_event(AudioChunk(16000, 2, 1, tone(0.5)).event())
        await asyncio.sleep(0.5)
        wyoming.server.proc.terminate()
        for reader, _ in opened:
            assert await asyncio.wait_for(reader.read(), READ_TIMEOUT) == b""
        wyoming.server.wait_exit()
        log = wyoming.server.output()
        assert "Traceback" not in log
        assert "CancelledError" not in log
        assert "Exception in callback" not in log
        await streaming.disconnect()
    finally:
        for _, writer in opened:
            writer.close()
        wyoming.server.stop()
