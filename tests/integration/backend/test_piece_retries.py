"""A long recording outlives a restart of vLLM: the stand-in is killed (SIGKILL) while a file
is transcribed and comes back, launched by `server.py` or behind `--backend-url`. The answer is
the whole transcript; only the pieces that were in flight are sent again; a stream's text
arrives once and in order. A piece refused for its content (a 400) is not sent again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from qwen3_asr_server.backend.launch import free_port
from tests.fixtures.audio import wav
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, app_before
from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.speech import spoken
from tests.fixtures.standin import StandIn

# Six phrases and their pauses, cut at every pause: six pieces, two at a time in flight
PHRASES = (6.0, 5.0, 7.0, 6.5, 5.5, 6.2)  # no two alike: each piece's audio differs
RECORDING = encode(spoken([p for s in PHRASES for p in ((s, True), (1.0, False))]), 16000, "mp3")
FORM = {"chunking_strategy": json.dumps({"type": "server_vad", "silence_duration_ms": 500})}
STANDIN = {
    "FAKE_VLLM_DESCRIBE": "1",  # "Heard 6.52 s.": each piece's text differs
    "FAKE_VLLM_RESPONSE_DELAY": "0.5",
    "FAKE_VLLM_PIECE_DELAY": "0.1",  # a streamed answer takes about a second
}
SERVER = ["--model", "tiny", "--segment-concurrency", "2"]


class Remote:
    """The stand-in vLLM run as its own process on a fixed port, as `--backend-url` sees a
    vLLM that another supervisor (or a person) restarts."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [str(tmp / "bin" / "vllm"), "serve", "tiny", "--port", str(self.port)]
        self.env = {**os.environ, **env}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.command, env=self.env, start_new_session=True)
        deadline = time.monotonic() + 30
        while not _answers(f"{self.url}/health"):
            assert time.monotonic() < deadline, "the stand-in never started"
            time.sleep(0.05)

    def kill(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # it and its "engine" child
        self.proc.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


class Setup:
    """The server in one of its two modes, and how to kill its vLLM (it comes back)."""

    def __init__(self, server: ServerProcess, asked: Path, kill: Callable[[], None]) -> None:
        self.server = server
        self.asked = asked  # a line, its audio's digest, for each chat request a stand-in got
        self.kill = kill

    def requests(self) -> int:
        return len(self.asked_since(0))

    def asked_since(self, before: int) -> list[str]:
        """The digests of the pieces that reached a stand-in after the first `before` did."""
        return self.asked.read_text().splitlines()[before:] if self.asked.exists() else []

    def retried(self) -> float:
        metrics = httpx.get(f"{self.server.url}/metrics").text
        return float(re.findall(r"^qwen3_asr_pieces_retried_total (\S+)$", metrics, re.M)[0])


@pytest.fixture(params=["supervised", "backend-url"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    install_launcher(tmp_path / "bin", "vllm")
    asked = tmp_path / "asked"
    env = {**STANDIN, "FAKE_VLLM_ASKED": str(asked)}
    if request.param == "supervised":
        server = ServerProcess(tmp_path, SERVER, env)

        def kill() -> None:
            os.kill(server.starts()[-1]["pid"], signal.SIGKILL)  # the supervisor restarts it

        try:
            server.wait_for_health(200)
            yield Setup(server, asked, kill)
        finally:
            server.stop()
        return
    remote = Remote(tmp_path, env)
    remote.start()
    server = ServerProcess(tmp_path, [*SERVER, "--backend-url", remote.url])

    def restart() -> None:
        remote.kill()
        threading.Timer(1.0, remote.start).start()  # back a second later, loading again

    try:
        server.wait_for_health(200)
        yield Setup(server, asked, restart)
    finally:
        server.stop()
        remote.kill()


def _transcribe(url: str, **form: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/audio/transcriptions",
        files={"file": ("meeting.mp3", RECORDING)},
        data={**FORM, **form},
        timeout=120,
    )


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_file_outlives_a_restart_of_vllm_as_json_and_as_a_stream(setup: Setup) -> None:
    url = setup.server.url
    expected = _transcribe(url).json()["text"]
    pieces = expected.count("Heard")
    assert pieces == len(PHRASES)

    # json: killed once the first piece is answered (a third piece was asked for)
    answers: list[httpx.Response] = []
    before = setup.requests()
    request = threading.Thread(target=lambda: answers.append(_transcribe(url)))
    request.start()
    _wait(lambda: setup.requests() >= before + 3, "the pieces never reached the stand-in")
    setup.kill()
    request.join(60)
    assert answers[0].status_code == 200, answers[0].text
    assert answers[0].json()["text"] == expected
    retried = setup.retried()
    assert 1 <= retried < pieces  # the pieces answered before the kill were kept
    _each_piece_once_but_those_retried(setup.asked_since(before), pieces, retried)

    # a stream: killed once the client has the first piece's first words
    before = setup.requests()
    events: list[dict[str, Any]] = []
    with httpx.stream(
        "POST",
        f"{url}/v1/audio/transcriptions",
        files={"file": ("meeting.mp3", RECORDING)},
        data={**FORM, "stream": "true"},
        timeout=120,
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if len(events) == 1:
                    setup.kill()
    *deltas, done = events
    assert {event["type"] for event in deltas} == {"transcript.text.delta"}, events[-1]
    assert done["type"] == "transcript.text.done"
    assert "".join(event["delta"] for event in deltas) == done["text"] == expected
    again = setup.retried() - retried
    assert 1 <= again < pieces
    _each_piece_once_but_those_retried(setup.asked_since(before), pieces, again)
    assert setup.server.wait_for_health(200)["status"] == "ok"


def _each_piece_once_but_those_retried(asked: list[str], pieces: int, retried: float) -> None:
    """Every piece reached the model, and only retried ones more than once. A retry may reach
    no model at all (sent while the stand-in is still down), so a retry is an upper bound."""
    assert len(set(asked)) == pieces, asked
    assert 0 <= len(asked) - pieces <= retried, asked


@pytest.mark.parametrize("stream", ["false", "true"])
async def test_a_piece_refused_for_its_content_is_not_sent_again(stream: str) -> None:
    refusal = "This model's maximum context length is 2048 tokens."
    async with app_before(StandIn(MODEL, refuse=refusal)) as harness:
        response = await harness.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("clip.wav", wav(3.0))},
            data={"stream": stream},
        )
        assert response.status_code == 400
        assert response.json()["error"]["message"] == refusal
        assert len(harness.standin.requests) == 1
        metrics = (await harness.http.get("/metrics")).text
        assert "qwen3_asr_pieces_retried_total 0.0" in metrics


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["one worker", "two workers"])
def test_a_backend_that_does_not_come_back_is_a_503_after_the_backend_wait(
    tmp_path: Path, workers: list[str]
) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    asked = tmp_path / "asked"
    remote = Remote(tmp_path, {**STANDIN, "FAKE_VLLM_ASKED": str(asked)})
    remote.start()
    waits = ["--backend-wait", "2", "--request-timeout", "600", *workers]
    server = ServerProcess(tmp_path, [*SERVER, "--backend-url", remote.url, *waits])
    setup = Setup(server, asked, remote.kill)
    try:
        server.wait_for_health(200)
        answers: list[httpx.Response] = []
        request = threading.Thread(target=lambda: answers.append(_transcribe(server.url)))
        request.start()
        # a third piece asked for: one is answered, so the file has work to lose
        _wait(lambda: setup.requests() >= 3, "the pieces never reached the stand-in")
        remote.kill()  # for good
        started = time.monotonic()
        request.join(60)
        waited = time.monotonic() - started
        assert answers[0].status_code == 503
        assert answers[0].headers["retry-after"] == "5"
        assert answers[0].json()["error"]["code"] == "backend_unavailable"
        assert 1.5 < waited < 15, waited  # --backend-wait, not --request-timeout
        assert setup.retried() == 0  # nothing to send again to: it never came back
        print(f"503 after {waited:.2f} s")
    finally:
        server.stop()
        remote.kill()
