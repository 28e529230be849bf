"""SIGTERM under load: every accepted request is answered, new ones get 503, vLLM stops last."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, alive, install_launcher

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
    for line in httpx.get(f"{server.url}/metrics", timeout=5).text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def _start(tmp_path: Path, args: list[str], delay: float) -> ServerProcess:
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(
        tmp_path, ["--model", "tiny", *args], {"FAKE_VLLM_RESPONSE_DELAY": str(delay)}
    )
    server.wait_for_health(200)
    return server


def _stream_events(response: httpx.Response) -> list[dict]:
    lines = response.text.splitlines()
    return [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]


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
