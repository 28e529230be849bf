"""Fail fast when nothing is at stake: a 5 s clip (plain or `stream=true`) sent the moment
vLLM goes away, before the supervisor has noticed, gets the 503 with `Retry-After` at once
rather than waiting for vLLM's return, behind `--backend-url` (one and two workers) and
launched by `server.py` (SIGKILLed; the supervisor restarts it). A long recording with
answered pieces still waits (`test_piece_retries.py`).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.speech import speech_wav
from tests.integration.backend.test_piece_retries import Remote

CLIP = speech_wav(5.0)
# Seconds a client waits for its answer here: before, the clip waited --request-timeout (600 s)
PATIENCE = 20
FAST = 10.0  # seconds within which the 503 must come (it took well under one)
SENT = 3  # clips of each kind (plain and streamed) sent at once


@dataclass
class Setup:
    server: ServerProcess
    kill: Callable[[], None]  # vLLM goes away
    revive: Callable[[], None]  # and is back (or is brought back by the supervisor)


@pytest.fixture(params=["backend-url", "backend-url, --workers 2", "supervised"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    install_launcher(tmp_path / "bin", "vllm")
    args = ["--model", "tiny"]
    if request.param == "supervised":
        server = ServerProcess(tmp_path, args)

        def kill() -> None:
            os.kill(server.starts()[-1]["pid"], signal.SIGKILL)

        try:
            server.wait_for_health(200)
            yield Setup(server, kill, lambda: None)
        finally:
            server.stop()
        return
    remote = Remote(tmp_path, {})
    remote.start()
    if request.param.endswith("--workers 2"):
        args += ["--workers", "2"]
    server = ServerProcess(tmp_path, [*args, "--backend-url", remote.url])
    try:
        server.wait_for_health(200)
        yield Setup(server, remote.kill, remote.start)
    finally:
        server.stop()
        remote.kill()


def _clip(url: str, stream: bool) -> tuple[httpx.Response, float]:
    """A 5 s clip transcribed, and the seconds its answer took (the whole of it)."""
    started = time.monotonic()
    response = httpx.post(
        f"{url}/v1/audio/transcriptions",
        files={"file": ("clip.wav", CLIP)},
        data={"stream": "true" if stream else "false"},
        timeout=PATIENCE,
    )
    return response, time.monotonic() - started


def test_a_clip_sent_as_vllm_goes_gets_a_503_at_once(setup: Setup) -> None:
    url = setup.server.url
    assert _clip(url, stream=False)[0].status_code == 200

    setup.kill()
    with ThreadPoolExecutor(2 * SENT) as pool:
        kinds = [False, True] * SENT
        answers = list(pool.map(lambda stream: _clip(url, stream), kinds))
    for response, seconds in answers:
        assert response.status_code == 503, response.text  # a stream's first answer too
        assert response.headers["retry-after"] == "5"
        assert response.json()["error"]["code"] == "backend_unavailable"
        assert seconds < FAST
    print(f"slowest 503: {max(seconds for _, seconds in answers):.2f} s")

    setup.revive()  # back: served again
    setup.server.wait_for_health(200)
    deadline = time.monotonic() + 30
    while (answer := _clip(url, stream=False)[0]).status_code != 200:
        assert answer.status_code == 503, answer.text  # a worker that has not seen it yet
        assert time.monotonic() < deadline, "never served again"
        time.sleep(0.2)
