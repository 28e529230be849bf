"""`--idle-sleep`: the launched vLLM (the stand-in, with vLLM's sleep endpoints) sleeps when
nobody uses it, and the next request wakes it and is answered."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures import metrics
from tests.fixtures.process import ServerProcess, install_launcher
from tests.fixtures.speech import speech_wav

SPEECH = speech_wav(1.0)


@pytest.fixture
def run_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def run(*flags: str, **env: str) -> ServerProcess:
        install_launcher(tmp_path / "bin", "vllm")
        environment = {"FAKE_VLLM_SLEEP_LOG": str(tmp_path / "sleep.log"), **env}
        server = ServerProcess(tmp_path, ["--model", "tiny", *flags], environment)
        started.append(server)
        return server

    yield run
    for server in started:
        server.stop()


def sleep_log(tmp_path: Path) -> list[str]:
    path = tmp_path / "sleep.log"
    return path.read_text().splitlines() if path.exists() else []


def transcribe(server: ServerProcess) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/audio/transcriptions",
        files={"file": ("a.wav", SPEECH)},
        data={"model": "tiny"},
        timeout=60,
    )


def _until(server: ServerProcess, status: str, seconds: float) -> dict:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answer = httpx.get(f"{server.url}/health", timeout=5)
        if answer.json().get("status") == status:
            assert answer.status_code == 200
            return dict(answer.json())
        time.sleep(0.05)
    raise AssertionError(f"/health never said {status}: {server.output()[-3000:]}")


def test_an_idle_engine_sleeps_and_the_next_request_wakes_it(run_server, tmp_path: Path) -> None:
    server = run_server("--idle-sleep", "0.5")
    server.wait_for_health(200)
    [start] = server.starts()
    assert "--enable-sleep-mode" in start["argv"]
    health = _until(server, "sleeping", 10)
    assert health["restarts"] == 0
    assert sleep_log(tmp_path) == ["sleep 1"]
    answer = transcribe(server)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "Hello world."
    assert sleep_log(tmp_path)[:2] == ["sleep 1", "wake_up"]
    page = httpx.get(f"{server.url}/metrics").text
    assert metrics.by_label(page, "qwen3_asr_backend_sleeps_total", "backend")["asr"] >= 1
    assert metrics.by_label(page, "qwen3_asr_backend_wakes_total", "backend")["asr"] == 1
    assert metrics.by_label(page, "qwen3_asr_wake_wait_seconds_count", "backend")["asr"] == 1
    assert len(server.starts()) == 1  # asleep, not stopped
