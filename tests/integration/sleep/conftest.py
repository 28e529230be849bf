"""What the `--idle-sleep` tests share: a server process in front of the stand-in vLLM, whose
sleep-mode calls land in the test's `sleep.log`, and the ways a test looks at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.speech import speech_wav

SPEECH = speech_wav(1.0)


@pytest.fixture
def run_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """`run_server(*flags, **env)`: `server.py --model tiny *flags` launching the stand-in
    vLLM with `env`, stopped after the test."""
    started: list[ServerProcess] = []

    def run(*flags: str, **env: str) -> ServerProcess:
        install_launcher(tmp_path / "bin", "vllm")
        environment = {
            "FAKE_VLLM_SLEEP_LOG": str(tmp_path / "sleep.log"),
            "FAKE_VLLM_LOAD_SECONDS": "0.2",
            **env,
        }
        server = ServerProcess(tmp_path, ["--model", "tiny", *flags], environment)
        started.append(server)
        return server

    yield run
    for server in started:
        server.stop()


def sleep_log(tmp_path: Path) -> list[str]:
    """The stand-in's sleep-mode calls so far, one a line (`sleep 1`, `wake_up`, ...)."""
    path = tmp_path / "sleep.log"
    return path.read_text().splitlines() if path.exists() else []


def transcribe(server: ServerProcess, **fields: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/audio/transcriptions",
        files={"file": ("a.wav", SPEECH)},
        data={"model": "tiny", **fields},
        timeout=60,
    )


def until(server: ServerProcess, status: str, seconds: float = 15) -> dict:
    """/health's body once it says `status` (always with a 200: a sleeping server serves),
    waiting for the server to listen first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(f"{server.url}/health", timeout=5)
        except httpx.ConnectError:
            assert server.proc.poll() is None, f"the server exited: {server.output()[-3000:]}"
        else:
            if answer.json().get("status") == status:
                assert answer.status_code == 200
                return dict(answer.json())
        time.sleep(0.05)
    raise AssertionError(f"/health never said {status}: {server.output()[-3000:]}")


def both_asleep(server: ServerProcess) -> dict:
    """/health's body once the speech model and the aligner both sleep."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        health = until(server, "sleeping")
        if health["aligner"]["status"] == "sleeping":
            return health
        time.sleep(0.05)
    raise AssertionError(f"the aligner never slept: {server.output()[-3000:]}")
