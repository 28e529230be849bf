"""Three server.py replicas (each with its stand-in vLLM) behind HAProxy health-checking
/health, under steady load: restarted one by one as Kubernetes restarts pods, then one
SIGKILLed. What a Deployment's rollout must not cost its clients."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.fixtures.audio import wav
from tests.fixtures.haproxy import HAProxy
from tests.fixtures.process import ServerProcess, alive, install_launcher
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.websocket import connect

REPLICAS = 3
HTTP_CLIENTS = 6
PRE_STOP = 1.0  # seconds between leaving the rotation and SIGTERM (the pod's preStop)
CLIP = wav(1.0)
UTTERANCE = spoken_pcm([(1.0, True), (0.8, False)])


def replica(folder: Path, index: int, port: int = 0) -> ServerProcess:
    """Replica `index` (on `port`: the same one, started again), ready."""
    install_launcher(folder / f"r{index}" / "bin", "vllm")
    started = ServerProcess(
        folder / f"r{index}",
        ["--model", "tiny", "--shutdown-timeout", "20"],
        {"FAKE_VLLM_RESPONSE_DELAY": "0.3"},
        port=port,
    )
    started.wait_for_health(200)
    return started


@dataclass
class Cluster:
    folder: Path
    replicas: list[ServerProcess]
    haproxy: HAProxy


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    replicas: list[ServerProcess] = []
    haproxy = None
    try:
        for index in range(REPLICAS):
            replicas.append(replica(tmp_path, index))
        haproxy = HAProxy(tmp_path, [each.port for each in replicas])
        for index in range(REPLICAS):
            haproxy.wait_until(f"r{index}", "UP")
        yield Cluster(tmp_path, replicas, haproxy)
    finally:
        if haproxy is not None:
            haproxy.stop()
        for each in replicas:
            each.stop()


@dataclass
class Outcome:
    kind: str  # json or stream
    status: int  # 0: no answer, the connection broke (`error` says how)
    complete: bool  # the whole answer came: the text, or the stream's done event
    seconds: float
    error: str = ""


def http_load(url: str, stop: threading.Event, worker: int) -> list[Outcome]:
    """One client sending transcriptions one after the other, plain and streamed in turn."""
    outcomes = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for turn in range(100_000):
            if stop.is_set():
                break
            kind = "stream" if (turn + worker) % 2 else "json"
            data = {"stream": "true"} if kind == "stream" else {}
            began = time.monotonic()
            try:
                response = client.post(
                    "/v1/audio/transcriptions", files={"file": ("a.wav", CLIP)}, data=data
                )
            except httpx.TransportError as broken:
                outcomes.append(Outcome(kind, 0, False, time.monotonic() - began, repr(broken)))
                continue
            body = response.text
            complete = response.status_code == 200 and (
                '"transcript.text.done","text":"Hello world."' in body
                if kind == "stream"
                else response.json()["text"] == "Hello world."
            )
            outcomes.append(Outcome(kind, response.status_code, complete, time.monotonic() - began))
    return outcomes


@dataclass
class Speaker:
    """A Realtime client that speaks utterance after utterance, reconnecting when closed."""

    closes: list[int] = field(default_factory=list)  # each close code the server sent
    refused: list[int] = field(default_factory=list)  # the status of each failed handshake
    lost: list[str] = field(default_factory=list)  # utterances started, never transcribed
    transcripts: int = 0


async def speak(url: str, stop: threading.Event, speaker: Speaker) -> None:
    ws_url = url.replace("http", "ws") + "/v1/realtime?intent=transcription"
    while not stop.is_set():
        try:
            ws = await connect(ws_url)
        except InvalidStatus as refused:  # then reconnect, as after a close
            speaker.refused.append(refused.response.status_code)
            await asyncio.sleep(0.2)
            continue
        async with ws:
            await one_session(ws, stop, speaker)


async def one_session(ws: ClientConnection, stop: threading.Event, speaker: Speaker) -> None:
    """Speak until stopped or closed; count the close and any utterance left untranscribed."""
    started: set[str] = set()

    async def listen() -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                event = json.loads(message)
                if event["type"] == "input_audio_buffer.speech_started":
                    started.add(event["item_id"])
                elif event["type"].endswith("input_audio_transcription.completed"):
                    started.discard(event["item_id"])
                    speaker.transcripts += 1

    listener = asyncio.create_task(listen())
    with contextlib.suppress(ConnectionClosed):
        while not stop.is_set() and not listener.done():
            for start in range(0, len(UTTERANCE), 4800):  # in real time
                chunk = base64.b64encode(UTTERANCE[start : start + 4800]).decode()
                await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
                await asyncio.sleep(0.1)
    if not listener.done():  # we stopped: wait for what is being transcribed
        await asyncio.sleep(1.5)
        await ws.close()
    await listener
    if ws.protocol.close_code != 1000:
        speaker.closes.append(ws.protocol.close_code or 0)
    speaker.lost += sorted(started)


def under_load(url: str, work: Callable[[], None]) -> tuple[list[Outcome], list[Speaker]]:
    """Run `work()` while HTTP clients and two Realtime speakers use the cluster."""
    stop = threading.Event()
    speakers = [Speaker(), Speaker()]

    def realtime() -> None:
        async def both() -> None:
            await asyncio.gather(*(speak(url, stop, each) for each in speakers))

        asyncio.run(both())

    with ThreadPoolExecutor(HTTP_CLIENTS + 1) as pool:
        clients = [pool.submit(http_load, url, stop, n) for n in range(HTTP_CLIENTS)]
        voices = pool.submit(realtime)
        time.sleep(2)  # load established
        try:
            work()
            time.sleep(2)  # and still served after
        finally:
            stop.set()
        outcomes = [outcome for client in clients for outcome in client.result()]
        voices.result()
    return outcomes, speakers


def test_a_rolling_restart_fails_no_request_and_loses_no_utterance(cluster: Cluster) -> None:
    """As a Deployment's rollout: out of the Service first, a pause (preStop), SIGTERM, the
    drain, a new process, ready again; one replica after the other."""

    def roll() -> None:
        for index, old in enumerate(cluster.replicas):
            cluster.haproxy.command(f"set server replicas/r{index} state maint")
            time.sleep(PRE_STOP)
            old.proc.send_signal(signal.SIGTERM)
            assert old.wait_exit(60) == -signal.SIGTERM
            cluster.replicas[index] = replica(cluster.folder, index, old.port)
            cluster.haproxy.command(f"set server replicas/r{index} state ready")
            cluster.haproxy.wait_until(f"r{index}", "UP")

    outcomes, speakers = under_load(cluster.haproxy.url, roll)
    failed = [outcome for outcome in outcomes if not outcome.complete]
    assert failed == []
    assert len(outcomes) > 60
    assert {outcome.kind for outcome in outcomes} == {"json", "stream"}
    for speaker in speakers:
        assert speaker.refused == []  # every handshake was answered
        assert speaker.closes  # its replica was restarted under it ...
        assert set(speaker.closes) == {1012}  # ... and it was told to reconnect
        assert speaker.lost == []  # no utterance it had begun went untranscribed
        assert speaker.transcripts >= 4


def test_a_killed_replica_costs_at_most_its_requests_in_flight(cluster: Cluster) -> None:
    """SIGKILL: the requests it was answering fail quickly, each in a way a client retries
    (HAProxy's 502, or the connection broken mid-answer: a stream cut short); the rest of the
    load goes on to the other replicas."""
    victim = cluster.replicas[0]

    def kill() -> None:
        victim.proc.kill()
        victim.proc.wait()
        cluster.haproxy.wait_until("r0", "DOWN")

    outcomes, speakers = under_load(cluster.haproxy.url, kill)
    failed = [outcome for outcome in outcomes if not outcome.complete]
    refused = [status for speaker in speakers for status in speaker.refused]
    # at most what each client had in flight: a request, or a Realtime handshake
    assert len(failed) + len(refused) <= HTTP_CLIENTS + len(speakers)
    assert all(outcome.status in (0, 502, 503) for outcome in failed), failed
    assert set(refused) <= {502, 503}
    assert max(outcome.seconds for outcome in outcomes) < 30  # nothing hung
    assert len(outcomes) - len(failed) > 30
    for start in victim.starts():  # its vLLM went with it (parent-death signal)
        deadline = time.monotonic() + 10
        while alive(start["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(start["pid"])
