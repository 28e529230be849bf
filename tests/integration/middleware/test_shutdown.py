"""SIGTERM under load: every accepted request is answered, new ones get 503, vLLM stops last."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.fixtures import metrics
from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, alive, install_launcher
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.websocket import connect

SPEECH = wav(1.0)


def _transcribe(url: str, stream: bool = False) -> httpx.Response:
    data = {"stream": "true"} if stream else {}
    with httpx.Client(timeout=60) as client:  # a fresh connection each time
        return client.post(
            f"{url}/v1/audio/transcriptions", files={"file": ("a.wav", SPEECH)}, data=data
        )


def _wait_for(check: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition never came true"
        time.sleep(0.05)


def _metric(server: ServerProcess, name: str) -> float:
    return metrics.value(httpx.get(f"{server.url}/metrics", timeout=5).text, name)


def _start(tmp_path: Path, args: list[str], delay: float, *, nohup: bool = False) -> ServerProcess:
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(
        tmp_path,
        ["--model", "tiny", *args],
        {"FAKE_VLLM_RESPONSE_DELAY": str(delay)},
        nohup=nohup,
    )
    server.wait_for_health(200)
    return server


def _stream_events(response: httpx.Response) -> list[dict]:
    lines = response.text.splitlines()
    return [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]


async def _play(ws: ClientConnection, pattern: list[tuple[float, bool]]) -> None:
    pcm = spoken_pcm(pattern)
    for start in range(0, len(pcm), 4800):  # 100 ms a message, in real time
        chunk = base64.b64encode(pcm[start : start + 4800]).decode()
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
        await asyncio.sleep(0.1)


async def _events_until_closed(ws: ClientConnection, into: list[str]) -> int:
    with contextlib.suppress(ConnectionClosed):
        async for message in ws:
            event = json.loads(message)
            into.append(event.get("transcript") or event["type"])
    assert ws.protocol.close_code is not None
    return ws.protocol.close_code


def test_sigterm_under_load_answers_every_accepted_request(tmp_path: Path) -> None:
    server = _start(tmp_path, ["--max-concurrent", "3"], delay=2)
    try:
        with ThreadPoolExecutor(8) as pool:
            accepted: list[Future[httpx.Response]] = [
                pool.submit(_transcribe, server.url, stream=i % 2 == 1) for i in range(6)
            ]
            # three with vLLM, three waiting in line: all of them accepted
            _wait_for(lambda: _metric(server, "qwen3_asr_queue_depth") == 3)
            server.proc.send_signal(signal.SIGTERM)
            _wait_for(lambda: httpx.get(f"{server.url}/health", timeout=5).status_code == 503)
            health = httpx.get(f"{server.url}/health", timeout=5)
            assert health.json()["status"] == "stopping"
            late = _transcribe(server.url)
            answers = [future.result() for future in accepted]
        assert late.status_code == 503
        assert late.headers["retry-after"] == "1"
        assert late.json()["error"]["code"] == "server_shutting_down"
        assert [answer.status_code for answer in answers] == [200] * 6
        for number, answer in enumerate(answers):
            if number % 2:
                assert _stream_events(answer)[-1]["text"] == "Hello world."
            else:
                assert answer.json()["text"] == "Hello world."
        assert server.wait_exit() == -signal.SIGTERM
        vllm = server.starts()[0]
        assert not alive(vllm["pid"])
        assert not alive(vllm["child"])
    finally:
        server.stop()


def test_requests_still_running_at_the_shutdown_timeout_get_a_503(tmp_path: Path) -> None:
    server = _start(tmp_path, ["--shutdown-timeout", "1"], delay=60)
    try:
        with ThreadPoolExecutor(2) as pool:
            running = [pool.submit(_transcribe, server.url, stream=s) for s in (False, True)]
            _wait_for(lambda: _metric(server, "qwen3_asr_upstream_in_flight") == 2)
            server.proc.send_signal(signal.SIGTERM)
            answers = [future.result() for future in running]
        # an answer, not a dropped connection, and long before vLLM's 60 s
        for answer in answers:
            assert answer.status_code == 503
            assert answer.headers["retry-after"]
            assert answer.json()["error"]["type"] == "server_error"
        assert server.wait_exit() == -signal.SIGTERM
        assert "ending them with 503" in server.output()
    finally:
        server.stop()


def test_sigterm_lets_realtime_sessions_finish_their_utterance_then_closes_them_with_1012(
    tmp_path: Path,
) -> None:
    """A session mid-utterance gets that utterance transcribed, then the close code that
    says "reconnect" (1012); an idle one gets it at once; a new one is refused. Meanwhile
    /livez stays 200 (a pod being stopped is not a dead pod) and /health says stopping."""
    server = _start(tmp_path, [], delay=1)
    url = server.url.replace("http", "ws") + "/v1/realtime?intent=transcription"

    async def scene() -> None:
        async with connect(url) as speaking, connect(url) as idle:
            heard: list[str] = []
            listener = asyncio.create_task(_events_until_closed(speaking, heard))
            await _play(speaking, [(0.3, False), (1.5, True)])
            await asyncio.to_thread(_wait_for, lambda: "input_audio_buffer.speech_started" in heard)
            server.proc.send_signal(signal.SIGTERM)
            idle_seen: list[str] = []
            assert await _events_until_closed(idle, idle_seen) == 1012
            assert idle.protocol.close_reason == "The server is restarting: reconnect."
            async with httpx.AsyncClient(base_url=server.url, timeout=5) as http:
                assert (await http.get("/livez")).status_code == 200
                assert (await http.get("/health")).status_code == 503
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url):
                    pass
            assert refused.value.response.status_code == 503
            await _play(speaking, [(0.5, True)])  # the speaker finishes...
            # ...and the microphone sends silence until the close: the transcript, begun at
            # the first 200 ms pause, may be done (and the session closed) before 1.2 s of it
            with contextlib.suppress(ConnectionClosed):
                await _play(speaking, [(1.2, False)])
            assert await listener == 1012
            assert heard[-1] == "Hello world."  # the utterance's transcript came first
            assert "input_audio_buffer.speech_stopped" in heard

    try:
        asyncio.run(scene())
        assert server.wait_exit() == -signal.SIGTERM
    finally:
        server.stop()


def test_sigterm_while_an_utterance_is_transcribed_waits_for_its_transcript(
    tmp_path: Path,
) -> None:
    """The speaker has finished: nothing is being spoken and the queue is empty, but vLLM is
    still writing the transcript (1 s). The close waits for it, while the microphone goes
    on sending silence."""
    server = _start(tmp_path, [], delay=1)
    url = server.url.replace("http", "ws") + "/v1/realtime?intent=transcription"

    async def scene() -> None:
        async with connect(url) as ws:
            heard: list[str] = []
            listener = asyncio.create_task(_events_until_closed(ws, heard))
            await _play(ws, [(0.3, False), (1.0, True), (0.8, False)])
            await asyncio.to_thread(_wait_for, lambda: "input_audio_buffer.committed" in heard)
            server.proc.send_signal(signal.SIGTERM)  # the worker has the utterance now
            with contextlib.suppress(ConnectionClosed):
                await _play(ws, [(3.0, False)])
            assert await listener == 1012
            assert heard[-1] == "Hello world."

    try:
        asyncio.run(scene())
        assert server.wait_exit() == -signal.SIGTERM
    finally:
        server.stop()


def test_sighup_drains_like_sigterm(tmp_path: Path) -> None:
    """A closed terminal or `systemctl reload` sends SIGHUP: the server drains and stops
    vLLM, as on SIGTERM, instead of dying at once and leaving vLLM to Linux's SIGTERM."""
    server = _start(tmp_path, [], delay=1.5)
    try:
        with ThreadPoolExecutor(2) as pool:
            running = [pool.submit(_transcribe, server.url, stream=s) for s in (False, True)]
            _wait_for(lambda: _metric(server, "qwen3_asr_upstream_in_flight") == 2)
            server.proc.send_signal(signal.SIGHUP)
            answers = [future.result() for future in running]
        assert [answer.status_code for answer in answers] == [200, 200]
        assert server.wait_exit() == -signal.SIGHUP
        vllm = server.starts()[0]
        assert not alive(vllm["pid"])
        assert not alive(vllm["child"])
        assert "Shutting down: 2 requests and sessions in progress" in server.output()
    finally:
        server.stop()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_under_nohup_sighup_is_ignored(tmp_path: Path, workers: str) -> None:
    """`nohup python server.py &` asks for a server that outlives its terminal: SIGHUP,
    inherited ignored, stays ignored (one process, or the main one of --workers 2)."""
    server = _start(tmp_path, ["--workers", workers], delay=0.5, nohup=True)
    try:
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(_transcribe, server.url, stream=False)
            _wait_for(lambda: _metric(server, "qwen3_asr_upstream_in_flight") == 1)
            server.proc.send_signal(signal.SIGHUP)
            assert running.result().status_code == 200
        time.sleep(1)  # as long as a drain would take to end the server
        assert server.proc.poll() is None
        assert _transcribe(server.url, stream=False).status_code == 200
        assert server.wait_for_health(200)["status"] == "ok"
        assert "Shutting down" not in server.output()
        assert "Stopping" not in server.output()
        server.proc.send_signal(signal.SIGTERM)
        assert server.wait_exit() == -signal.SIGTERM
    finally:
        server.stop()
