"""`--idle-sleep`'s ways to sleep and wake, each through a server process and the stand-in
vLLM: sleep mode's level 2 (the weights reloaded), stopping and starting a vLLM without the
sleep endpoints, requests that meet a wake or the moment of sleep, a wake slower than
`--wake-timeout`, a backend given by URL, and the aligner sleeping on its own."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai

from tests.fixtures import metrics
from tests.fixtures.process import ServerProcess, gone
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_sleep import SleepMode
from tests.integration.sleep.conftest import SPEECH, both_asleep, sleep_log, transcribe, until


def _counts(server: ServerProcess, name: str) -> dict[str, float]:
    """A per-backend series of /metrics by its `backend` label."""
    return metrics.by_label(httpx.get(f"{server.url}/metrics").text, name, "backend")


def test_level_2_reloads_the_weights_before_the_request_is_sent(run_server, tmp_path: Path) -> None:
    server = run_server("--idle-sleep", "0.5", "--idle-sleep-level", "2")
    until(server, "sleeping")
    assert sleep_log(tmp_path) == ["sleep 2"]
    answer = transcribe(server)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "Hello world."
    woken = ["sleep 2", "wake_up weights", "reload_weights", "wake_up kv_cache"]
    assert sleep_log(tmp_path)[:4] == woken
    assert not [line for line in sleep_log(tmp_path) if line.startswith("refused")]


def test_a_vllm_without_sleep_endpoints_is_stopped_and_started_again(run_server) -> None:
    server = run_server("--idle-sleep", "0.5", FAKE_VLLM_NO_SLEEP_ENDPOINTS="1")
    server.wait_for_health(200)
    [first] = server.starts()
    health = until(server, "sleeping")
    assert health["restarts"] == 0
    assert gone([first["pid"], first["child"]]), "the sleeping vLLM was left running"
    answer = transcribe(server)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "Hello world."
    assert len(server.starts()) == 2
    assert httpx.get(f"{server.url}/health").json()["restarts"] == 0
    assert _counts(server, "qwen3_asr_backend_restarts_total")["asr"] == 0
    assert _counts(server, "qwen3_asr_backend_wakes_total")["asr"] == 1


def test_requests_that_arrive_during_a_wake_wait_for_the_same_wake(
    run_server, tmp_path: Path
) -> None:
    server = run_server("--idle-sleep", "0.5", FAKE_VLLM_WAKE_SECONDS="2")
    until(server, "sleeping")
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: transcribe(server), range(4)))
    assert [answer.status_code for answer in answers] == [200] * 4
    assert sleep_log(tmp_path).count("wake_up") == 1
    assert _counts(server, "qwen3_asr_wake_wait_seconds_count")["asr"] == 4


def test_a_request_at_the_moment_of_sleep_is_answered(run_server, tmp_path: Path) -> None:
    """Pauses on either side of --idle-sleep: requests land while the engine is awake, falling
    asleep, asleep and waking; none may reach it asleep (the stand-in refuses those)."""
    server = run_server("--idle-sleep", "0.2")
    server.wait_for_health(200)
    for each in range(30):
        time.sleep(0.1 + 0.01 * (each * 7 % 31))  # 0.1 .. 0.4 s, in a scattered order
        answer = transcribe(server)
        assert answer.status_code == 200, answer.text
    log = sleep_log(tmp_path)
    assert "sleep 1" in log
    assert "wake_up" in log
    assert not [line for line in log if line.startswith("refused")]


def test_a_wake_slower_than_wake_timeout_is_a_503_and_the_engine_still_wakes(
    run_server, tmp_path: Path
) -> None:
    server = run_server("--idle-sleep", "2", "--wake-timeout", "1", FAKE_VLLM_WAKE_SECONDS="4")
    until(server, "sleeping")
    answer = transcribe(server)
    assert answer.status_code == 503, answer.text
    assert "Retry-After" in answer.headers
    error = answer.json()["error"]
    assert "--wake-timeout" in error["message"]
    assert set(error) >= {"message", "type", "code"}
    until(server, "ok")  # woken for the request that gave up, awake for its retry
    assert sleep_log(tmp_path)[:2] == ["sleep 1", "wake_up"]
    again = transcribe(server)
    assert again.status_code == 200, again.text
    assert again.json()["text"] == "Hello world."


def test_a_remote_vllm_with_sleep_endpoints_sleeps_and_wakes(run_server, tmp_path: Path) -> None:
    remote_log = tmp_path / "remote.log"
    remote = ThreadedServer(SleepMode(StandIn("tiny").app, remote_log)).start()
    try:
        server = run_server("--backend-url", remote.url, "--idle-sleep", "0.5")
        until(server, "sleeping")
        assert remote_log.read_text().splitlines() == ["sleep 1"]
        answer = transcribe(server)
        assert answer.status_code == 200, answer.text
        assert answer.json()["text"] == "Hello world."
        assert remote_log.read_text().splitlines()[:2] == ["sleep 1", "wake_up"]
        assert server.starts() == []  # nothing launched
    finally:
        remote.stop()


def test_a_remote_vllm_without_sleep_endpoints_ends_the_server(run_server) -> None:
    remote = ThreadedServer(StandIn("tiny").app).start()
    try:
        server = run_server("--backend-url", remote.url, "--idle-sleep", "1")
        assert server.wait_exit(timeout=40) != 0
        errors = [
            line
            for line in server.output().splitlines()
            if line.startswith("qwen3-asr-server: error: ")
        ]  # not the last line only: what the stand-in said as it stopped may come after
        assert len(errors) == 1
        assert "--enable-sleep-mode" in errors[0]
    finally:
        remote.stop()


def test_the_aligner_sleeps_and_wakes_on_its_own(run_server) -> None:
    server = run_server("--aligner", "org/aligner", "--idle-sleep", "0.5")
    both_asleep(server)
    answer = transcribe(server)
    assert answer.status_code == 200, answer.text
    assert httpx.get(f"{server.url}/health").json()["aligner"]["status"] == "sleeping"
    assert _counts(server, "qwen3_asr_backend_wakes_total") == {"asr": 1, "aligner": 0}

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
    result = client.audio.transcriptions.create(
        model="tiny",
        file=("a.wav", SPEECH),
        response_format="verbose_json",
        timestamp_granularities=["word"],
    )
    assert result.words is not None
    assert [word.word for word in result.words] == ["Hello", "world"]
    assert _counts(server, "qwen3_asr_backend_wakes_total")["aligner"] == 1
