"""GET /v1/realtime?intent=transcription, driven over a real WebSocket against the stand-in."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import InvalidStatus

from qwen3_asr_server.entrypoints.realtime import connection as realtime_connection
from qwen3_asr_server.speech import scoring
from qwen3_asr_server.speech.scoring import scored
from tests.fixtures import metrics
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.standin import StandIn
from tests.fixtures.websocket import connect

Events = list[dict[str, Any]]
HEARD = re.compile(r"Heard (\d+\.\d+) s\.")
TRANSCRIPTION = "conversation.item.input_audio_transcription."
# Two utterances: 1.5 s and 2 s of speech, after 0.5 s and 1 s of silence
PATTERN = [(0.5, False), (1.5, True), (1.0, False), (2.0, True), (1.0, False)]


def heard(transcripts: list[str]) -> list[float]:
    """The seconds of audio the stand-in says it heard in each transcript ("Heard 1.93 s.")."""
    return [float(seconds) for text in transcripts for seconds in HEARD.findall(text)]


@contextmanager
def serving(
    standin: StandIn | None = None, api_key: str | None = None, **settings: Any
) -> Iterator[str]:
    """The server in front of a stand-in, both in threads; yields the ws:// base URL."""
    server = LiveServer(standin or StandIn(MODEL, describe=True), api_key=api_key, **settings)
    try:
        yield server.url.replace("http://", "ws://")
    finally:
        server.stop()


@asynccontextmanager
async def session(
    url: str, query: str = "?intent=transcription", **kwargs: Any
) -> AsyncIterator[ClientConnection]:
    async with connect(f"{url}/v1/realtime{query}", **kwargs) as ws:
        created = json.loads(await ws.recv())
        assert created["type"] in ("session.created", "transcription_session.created")
        yield ws


async def send(ws: ClientConnection, kind: str, **fields: Any) -> None:
    await ws.send(json.dumps({"type": kind, **fields}))


async def stream(
    ws: ClientConnection, audio: bytes, rate: int = 24000, ms: int = 100, pace: float = 0.0
) -> None:
    """Append `audio` in `ms` chunks, as a microphone would: without waiting in real time,
    or `pace` seconds after each chunk."""
    step = rate * ms // 1000 * 2
    for start in range(0, len(audio), step):
        chunk = base64.b64encode(audio[start : start + step]).decode()
        await send(ws, "input_audio_buffer.append", audio=chunk)
        if pace:
            await asyncio.sleep(pace)


async def until(
    ws: ClientConnection, done: Callable[[Events], bool], seconds: float = 10
) -> Events:
    """Events received until `done(events)` holds."""
    received: Events = []
    async with asyncio.timeout(seconds):
        while not done(received):
            received.append(json.loads(await ws.recv()))
    return received


def completed(count: int) -> Callable[[Events], bool]:
    return lambda events: sum(e["type"] == TRANSCRIPTION + "completed" for e in events) >= count


def of(events: Events, kind: str) -> Events:
    return [event for event in events if event["type"] == kind]


async def test_utterances_are_found_committed_and_transcribed_in_order() -> None:
    standin = StandIn(MODEL, describe=True)
    with serving(standin) as url:
        async with session(url) as ws:
            await stream(ws, spoken_pcm(PATTERN))
            events = await until(ws, completed(2))
        async with httpx.AsyncClient() as http:
            counted = (await http.get(url.replace("ws://", "http://") + "/metrics")).text
    # each utterance counted as a Realtime transcription, with its audio
    assert 'qwen3_asr_transcriptions_total{protocol="realtime"} 2.0' in counted
    assert 'qwen3_asr_audio_seconds_total{protocol="realtime"}' in counted
    assert 'protocol="http"' not in counted
    started = of(events, "input_audio_buffer.speech_started")
    stopped = of(events, "input_audio_buffer.speech_stopped")
    # speech at 0.5-2.0 s and 3.0-5.0 s: starts 300 ms early (prefix padding), ends 150 ms late;
    # real speech swells and fades, so its edges are found within about three Silero windows
    assert [e["audio_start_ms"] for e in started] == pytest.approx([200, 2700], abs=100)
    assert [e["audio_end_ms"] for e in stopped] == pytest.approx([2150, 5150], abs=100)
    items = [e["item_id"] for e in started]
    assert len(set(items)) == 2
    for item in items:
        mine = [
            e["type"] for e in events if item in (e.get("item_id"), e.get("item", {}).get("id"))
        ]
        deltas = [e for e in of(events, TRANSCRIPTION + "delta") if e["item_id"] == item]
        assert mine[:5] == [
            "input_audio_buffer.speech_started",
            "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed",
            "conversation.item.added",
            "conversation.item.done",
        ]
        assert mine[-1] == TRANSCRIPTION + "completed"
        assert set(mine[5:-1]) == {TRANSCRIPTION + "delta"}
        [done] = [e for e in of(events, TRANSCRIPTION + "completed") if e["item_id"] == item]
        assert "".join(d["delta"] for d in deltas) == done["transcript"]
        assert done["usage"]["type"] == "tokens"
        assert done["usage"]["output_tokens"] > 0
    committed = of(events, "input_audio_buffer.committed")
    assert [e["previous_item_id"] for e in committed] == [None, items[0]]
    # each utterance went upstream alone: about 0.2-2.15 s, then 2.7-5.15 s
    transcripts = [e["transcript"] for e in of(events, TRANSCRIPTION + "completed")]
    assert heard(transcripts) == pytest.approx([1.95, 2.45], abs=0.15)
    # the first transcript is the second utterance's context
    second = standin.requests[-1]["messages"]
    assert second[0] == {"role": "system", "content": transcripts[0]}


async def test_16khz_input_and_a_forced_language_and_prompt() -> None:
    standin = StandIn(MODEL, describe=True)
    with serving(standin) as url:
        async with session(url) as ws:
            audio = {"format": {"type": "audio/pcm", "rate": 16000}}
            audio["transcription"] = {"language": "fr", "prompt": "Qwen, vLLM"}
            await send(
                ws, "session.update", session={"type": "transcription", "audio": {"input": audio}}
            )
            [updated] = await until(ws, lambda events: len(events) == 1)
            assert updated["type"] == "session.updated"
            assert updated["session"]["audio"]["input"]["format"] == {
                "type": "audio/pcm",
                "rate": 16000,
            }
            await stream(ws, spoken_pcm(PATTERN[:3], rate=16000), rate=16000)
            events = await until(ws, completed(1))
    [done] = of(events, TRANSCRIPTION + "completed")
    assert done["transcript"] == "Bonjour le monde."  # the stand-in's French, forced
    [start] = of(events, "input_audio_buffer.speech_started")
    assert start["audio_start_ms"] == pytest.approx(200, abs=100)
    sent = standin.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "Qwen, vLLM"}
    assert sent[-1]["content"] == "language French<asr_text>"


async def test_manual_commits_without_server_vad() -> None:
    with serving() as url:
        async with session(url) as ws:
            vad_off = {"type": "transcription", "audio": {"input": {"turn_detection": None}}}
            await send(ws, "session.update", session=vad_off)
            await until(ws, lambda events: len(events) == 1)
            await send(ws, "input_audio_buffer.commit")
            [refused] = await until(ws, lambda events: len(events) == 1)
            assert refused["error"]["code"] == "input_audio_buffer_commit_empty"
            await stream(ws, spoken_pcm(PATTERN))
            await send(ws, "input_audio_buffer.commit")
            events = await until(ws, completed(1))
            # cleared audio is gone: the next commit holds only what came after it
            await stream(ws, spoken_pcm([(1.0, True)]))
            await send(ws, "input_audio_buffer.clear")
            await stream(ws, spoken_pcm([(0.5, True)]))
            await send(ws, "input_audio_buffer.commit")
            events += await until(ws, completed(1))
    assert not of(events, "input_audio_buffer.speech_started")
    assert len(of(events, "input_audio_buffer.cleared")) == 1
    transcripts = [e["transcript"] for e in of(events, TRANSCRIPTION + "completed")]
    assert transcripts == ["Heard 6.00 s.", "Heard 0.50 s."]  # no VAD: the whole buffer


async def test_the_beta_protocol_gets_beta_event_names() -> None:
    with serving() as url:
        headers = {"OpenAI-Beta": "realtime=v1"}
        async with connect(
            f"{url}/v1/realtime?intent=transcription", additional_headers=headers
        ) as ws:
            [created] = await until(ws, lambda events: len(events) == 1)
            assert created["type"] == "transcription_session.created"
            update = {"input_audio_format": "pcm16", "input_audio_transcription": {"model": MODEL}}
            await send(ws, "transcription_session.update", session=update)
            await stream(ws, spoken_pcm(PATTERN[:3]))
            events = await until(ws, completed(1))
    assert events[0]["type"] == "transcription_session.updated"
    assert len(of(events, "conversation.item.created")) == 1
    assert not of(events, "conversation.item.added")


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "invalid_json"),
        ("[1, 2]", "invalid_event"),
        (b"\x00\x01", "binary_frame_not_supported"),
        (json.dumps({"type": "response.create"}), "invalid_event"),
        (json.dumps({"type": "input_audio_buffer.append", "audio": "!!"}), "invalid_value"),
        (json.dumps({"type": "input_audio_buffer.append", "audio": "AA=="}), "invalid_value"),
        (json.dumps({"type": "input_audio_buffer.append"}), "missing_required_parameter"),
        (
            json.dumps(
                {
                    "type": "input_audio_buffer.append",
                    "audio": base64.b64encode(bytes(3200)).decode(),
                }
            ),
            None,
        ),
    ],
    ids=[
        "not-json",
        "array",
        "binary",
        "unknown-type",
        "bad-base64",
        "odd-bytes",
        "no-audio",
        "fine",
    ],
)
async def test_bad_events_get_error_events_and_the_session_goes_on(
    frame: str | bytes, code: str | None
) -> None:
    with serving() as url:
        async with session(url) as ws:
            await ws.send(frame)
            if code is not None:
                [error] = await until(ws, lambda events: len(events) == 1)
                assert error["type"] == "error"
                assert error["error"]["code"] == code
                assert error["error"]["message"]
            await stream(ws, spoken_pcm(PATTERN[:3]))
            events = await until(ws, completed(1))
    assert not of(events, "error")


async def test_an_oversized_event_is_refused_and_the_session_goes_on() -> None:
    from qwen3_asr_server.entrypoints.realtime.connection import MAX_EVENT_BYTES

    with serving() as url:
        async with session(url) as ws:
            huge = base64.b64encode(bytes(MAX_EVENT_BYTES)).decode()
            await send(ws, "input_audio_buffer.append", audio=huge, event_id="evt_big")
            [error] = await until(ws, lambda events: len(events) == 1)
            assert error["error"]["code"] == "event_too_large"
            await stream(ws, spoken_pcm(PATTERN[:3]))
            await until(ws, completed(1))


async def test_a_bad_session_update_names_the_field_and_changes_nothing() -> None:
    with serving() as url:
        async with session(url) as ws:
            audio = {"input": {"format": {"type": "audio/pcm", "rate": 8000}}}
            await send(
                ws,
                "session.update",
                session={"type": "transcription", "audio": audio},
                event_id="evt_1",
            )
            [error] = await until(ws, lambda events: len(events) == 1)
            assert error["error"]["param"] == "session.audio.input.format.rate"
            assert error["error"]["event_id"] == "evt_1"
            await stream(ws, spoken_pcm(PATTERN[:3]))  # still 24 kHz
            events = await until(ws, completed(1))
    transcript = of(events, TRANSCRIPTION + "completed")[0]["transcript"]
    assert heard([transcript]) == pytest.approx([1.95], abs=0.15)


async def test_the_api_key_comes_in_a_header_or_a_subprotocol() -> None:
    with serving(api_key="sk-test") as url:
        target = f"{url}/v1/realtime?intent=transcription"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(target):
                pass
        assert refused.value.response.status_code == 401
        body = json.loads(refused.value.response.body or b"{}")
        assert body["error"]["code"] == "missing_api_key"
        with pytest.raises(InvalidStatus) as wrong:
            async with connect(target, additional_headers={"Authorization": "Bearer nope"}):
                pass
        assert wrong.value.response.status_code == 401
        async with connect(target, additional_headers={"Authorization": "Bearer sk-test"}) as ws:
            assert json.loads(await ws.recv())["type"] == "session.created"
        protocols = ["realtime", "openai-insecure-api-key.sk-test", "openai-beta.realtime-v1"]
        async with connect(target, subprotocols=protocols) as ws:  # type: ignore[arg-type]
            assert ws.subprotocol == "realtime"  # a browser insists on one it offered
            assert json.loads(await ws.recv())["type"] == "transcription_session.created"


async def test_other_intents_and_unknown_models_are_refused_at_the_handshake() -> None:
    with serving() as url:
        for query, status in (("?intent=conversation", 400), ("?model=whisper-9", 404)):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(f"{url}/v1/realtime{query}"):
                    pass
            assert refused.value.response.status_code == status
        async with session(url, f"?intent=transcription&model={MODEL}"):
            pass


async def test_a_backend_failure_fails_that_item_only() -> None:
    standin = StandIn(MODEL, describe=True, fail_after=1)
    with serving(standin) as url:
        async with session(url) as ws:
            await stream(ws, spoken_pcm(PATTERN))
            events = await until(
                ws,
                lambda got: (
                    len(of(got, TRANSCRIPTION + "failed"))
                    + len(of(got, TRANSCRIPTION + "completed"))
                    >= 2
                ),
            )
    failed = of(events, TRANSCRIPTION + "failed")
    assert failed
    assert all(e["error"]["message"] for e in failed)
    assert not of(events, "error")


async def test_utterances_fail_at_once_when_vllm_is_gone_and_the_session_goes_on() -> None:
    """Nothing of an utterance is answered when vLLM goes away, so nothing is lost by failing
    it: its item fails at once (it used to wait for vLLM's return, up to --request-timeout)."""
    server = LiveServer(StandIn(MODEL, describe=True))
    try:
        async with session(server.url.replace("http://", "ws://")) as ws:
            server.stop_backend()
            started = time.monotonic()
            await stream(ws, spoken_pcm(PATTERN))
            events = await until(ws, lambda got: len(of(got, TRANSCRIPTION + "failed")) >= 2, 20)
            seconds = time.monotonic() - started
            await send(ws, "input_audio_buffer.clear")  # the session still answers
            await until(ws, lambda got: bool(of(got, "input_audio_buffer.cleared")))
    finally:
        server.stop()
    failed = of(events, TRANSCRIPTION + "failed")
    assert [event["error"]["code"] for event in failed] == ["backend_unavailable"] * 2
    assert not of(events, "error")
    assert seconds < 10
    print(f"both utterances failed within {seconds:.2f} s")


async def test_the_openai_sdk_realtime_client_gets_transcripts() -> None:
    with serving() as url:
        client = AsyncOpenAI(base_url=url.replace("ws://", "http://") + "/v1", api_key="unused")
        manager = client.realtime.connect(extra_query={"intent": "transcription"})
        async with manager as connection:
            audio = {"input": {"transcription": {"model": MODEL}}}
            await connection.session.update(session={"type": "transcription", "audio": audio})
            raw = spoken_pcm(PATTERN)
            for start in range(0, len(raw), 4800):
                chunk = base64.b64encode(raw[start : start + 4800]).decode()
                await connection.input_audio_buffer.append(audio=chunk)
            seen: list[str] = []
            transcripts: list[str] = []
            async with asyncio.timeout(10):
                async for event in connection:
                    seen.append(event.type)
                    if event.type == "conversation.item.input_audio_transcription.completed":
                        transcripts.append(event.transcript)
                        if len(transcripts) == 2:
                            break
    assert seen[:2] == ["session.created", "session.updated"]
    assert heard(transcripts) == pytest.approx([1.95, 2.45], abs=0.15)


async def test_the_server_process_keeps_a_session_past_the_read_timeout(tmp_path: Path) -> None:
    """server.py with --read-timeout 1: a session that streams for 3.5 s is not cut, and a
    refused handshake is answered without an error in the log. Loading the VAD's ONNX Runtime
    leaves nothing in the temp folder or the home directory (its telemetry is off)."""
    install_launcher(tmp_path / "bin", "vllm")
    home, temp = tmp_path / "home", tmp_path / "temp"
    home.mkdir()
    temp.mkdir()
    server = ServerProcess(
        tmp_path,
        ["--model", "m", "--read-timeout", "1", "--api-key", "k"],
        env={"HOME": str(home), "TMPDIR": str(temp)},
    )
    try:
        server.wait_for_health(200)
        url = server.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url):
                pass
        assert refused.value.response.status_code == 401
        async with connect(url, additional_headers={"Authorization": "Bearer k"}) as ws:
            audio = spoken_pcm([(0.5, False), (1.5, True), (1.5, False)])
            step = 2400 * 2  # 100 ms at 24 kHz
            for start in range(0, len(audio), step):
                chunk = base64.b64encode(audio[start : start + step]).decode()
                await send(ws, "input_audio_buffer.append", audio=chunk)
                await asyncio.sleep(0.1)  # as a microphone does
            events = await until(ws, completed(1))
    finally:
        server.stop()
    assert of(events, TRANSCRIPTION + "completed")[0]["transcript"] == "Hello world."
    assert "ERROR" not in server.output()
    assert [path for path in temp.rglob("*") if path.is_file()] == []
    assert list(home.rglob("*")) == []


async def test_speech_longer_than_the_models_window_is_cut_into_utterances() -> None:
    with serving() as url:
        async with session(url) as ws:
            await stream(ws, spoken_pcm([(0.5, False), (40.0, True), (1.0, False)]))
            events = await until(ws, completed(2), seconds=20)
    started = of(events, "input_audio_buffer.speech_started")
    stopped = of(events, "input_audio_buffer.speech_stopped")
    assert len(started) == len(stopped) == 2
    # the first utterance is the model's 30 s (to the VAD's 32 ms window); the second starts
    # where it was cut
    assert 29968 < stopped[0]["audio_end_ms"] - started[0]["audio_start_ms"] <= 30000
    assert started[1]["audio_start_ms"] == stopped[0]["audio_end_ms"]
    transcripts = [e["transcript"] for e in of(events, TRANSCRIPTION + "completed")]
    assert heard(transcripts)[0] == pytest.approx(30.0, abs=0.04)


async def test_with_vllm_realtime_speech_streams_into_vllm_as_it_is_spoken() -> None:
    standin = StandIn(MODEL, realtime=True)
    with serving(standin, vllm_realtime=True) as url:
        async with session(url) as ws:
            # at ten times the speed of speech: a speaker never runs ahead of the relay by
            # more than that, while audio sent all at once can reach the VAD's end of speech
            # before the relay has had its turn to send anything
            speech = spoken_pcm(
                [(0.5, False), (12.0, True), (1.0, False), (2.0, True), (1.0, False)]
            )
            await stream(ws, speech, pace=0.01)
            events = await until(ws, completed(2))
    first, second = (e["item_id"] for e in of(events, "input_audio_buffer.speech_started"))
    mine = [e["type"] for e in events if e.get("item_id") == first]
    # vLLM answers every 5 s of speech: text arrives while the speaker is still talking
    assert mine.index(TRANSCRIPTION + "delta") < mine.index("input_audio_buffer.speech_stopped")
    done = {e["item_id"]: e for e in of(events, TRANSCRIPTION + "completed")}
    # 0.22-13.0 s (the audio streams on until the pause is recognised, 500 ms of it) in
    # three segments of vLLM's, cleaned and joined; the chat path is unused
    # (real speech may fall silent a little before its piece of the pattern ends)
    assert heard([done[first]["transcript"]]) == pytest.approx([5, 5, 2.78], abs=0.3)
    assert heard([done[second]["transcript"]]) == pytest.approx([2.78], abs=0.3)
    for item in (first, second):
        deltas = [e["delta"] for e in of(events, TRANSCRIPTION + "delta") if e["item_id"] == item]
        assert "".join(deltas) == done[item]["transcript"]
    segments = heard([done[first]["transcript"], done[second]["transcript"]])
    assert standin.realtime_segments == pytest.approx(segments, abs=0.01)
    assert standin.requests == []


async def test_the_backend_key_stays_out_of_a_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    """websockets logs every handshake header at debug level: not vLLM's key."""
    caplog.set_level(logging.DEBUG)
    standin = StandIn(MODEL, realtime=True)
    with serving(standin, vllm_realtime=True, backend_api_key="backend-key-7f3a") as url:
        async with session(url) as ws:
            await stream(ws, spoken_pcm([(0.5, False), (2.0, True), (1.0, False)]), pace=0.01)
            await until(ws, completed(1))
    assert standin.realtime_segments  # the speech went through vLLM's realtime endpoint
    assert "backend-key-7f3a" not in caplog.text


@pytest.mark.parametrize("offered", [True, False])
async def test_vllm_realtime_falls_back_to_chat_where_vllm_cannot_serve(offered: bool) -> None:
    """vLLM's endpoint takes no language, prompt or context; and it may not be there at all."""
    standin = StandIn(MODEL, realtime=offered, describe=True)
    with serving(standin, vllm_realtime=True) as url:
        async with session(url) as ws:
            if offered:
                transcription = {"language": "en"}
                update = {
                    "type": "transcription",
                    "audio": {"input": {"transcription": transcription}},
                }
                await send(ws, "session.update", session=update)
            await stream(ws, spoken_pcm(PATTERN[:3]))
            events = await until(ws, completed(1))
    [done] = of(events, TRANSCRIPTION + "completed")
    if offered:
        assert done["transcript"] == "Hello world."
    else:
        assert heard([done["transcript"]]) == pytest.approx([1.95], abs=0.15)
    assert standin.realtime_segments == []
    assert len(standin.requests) == 1


def _sessions(http_url: str) -> float:
    return metrics.value(httpx.get(f"{http_url}/metrics").text, "qwen3_asr_realtime_sessions")


def _deaf_client(http_url: str) -> socket.socket:
    """A WebSocket session opened by hand on a socket with a tiny receive buffer, which
    this test never reads."""
    host, port = http_url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    key = base64.b64encode(bytes(16)).decode()
    sock.sendall(
        f"GET /v1/realtime?intent=transcription HTTP/1.1\r\nHost: {host}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    assert sock.recv(12) == b"HTTP/1.1 101"
    return sock


def test_a_client_that_stops_reading_loses_its_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(realtime_connection, "SEND_TIMEOUT", 0.5)
    payload = b"not json" * 100  # each one earns an error event
    frame = bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2, "big") + bytes(4) + payload
    with serving() as url:
        http_url = url.replace("ws://", "http://")
        sock = _deaf_client(http_url)
        sock.settimeout(0.2)
        deadline = time.monotonic() + 60  # a guard: a busy 2-core CI machine is slow
        while _sessions(http_url) == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        try:
            while _sessions(http_url) == 1:  # unread events fill the buffers; then the
                assert time.monotonic() < deadline  # server's send waits SEND_TIMEOUT, and
                with contextlib.suppress(TimeoutError):  # the session ends
                    for _ in range(100):
                        sock.sendall(frame)
        finally:
            sock.close()
        assert _sessions(http_url) == 0
        asyncio.run(_still_serving(url))


async def _still_serving(url: str) -> None:
    async with session(url) as again:
        await stream(again, spoken_pcm(PATTERN[:3]))
        await until(again, completed(1))


async def test_one_long_append_is_judged_in_a_thread_with_the_same_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client may send seconds of audio in one append: Silero's ~170 windows then run in a
    thread, not in the event loop every session shares (as every append's do, in batches
    with other sessions' windows), and find what 100 ms appends find."""
    judged: list[tuple[int, bool]] = []  # per batch: its longest stream's windows, off the loop?

    def counted(step: Any, windows: list[Any], states: list[Any]) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a thread of no event loop's
            judged.append((max(len(each) for each in windows), True))
        else:
            judged.append((max(len(each) for each in windows), False))
        return scored(step, windows, states)

    monkeypatch.setattr(scoring, "scored", counted)
    found = []
    with serving() as url:
        for ms in (100, 6000):
            async with session(url) as ws:
                await stream(ws, spoken_pcm(PATTERN), ms=ms)
                events = await until(ws, completed(2))
            found.append(
                [
                    (e["type"], e.get("audio_start_ms", e.get("audio_end_ms")))
                    for e in events
                    if e["type"].startswith("input_audio_buffer.speech_")
                ]
            )
    assert found[0] == found[1]
    assert len(found[0]) == 4
    assert all(off_loop for _, off_loop in judged)
    assert max(windows for windows, _ in judged) > 150  # the long append, in one batch
