"""`--idle-sleep`: the launched vLLM (the stand-in, with vLLM's sleep endpoints) sleeps when
nobody uses it, and the next request wakes it and is answered."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fixtures import metrics
from tests.integration.sleep.conftest import sleep_log, transcribe, until


def test_an_idle_engine_sleeps_and_the_next_request_wakes_it(run_server, tmp_path: Path) -> None:
    server = run_server("--idle-sleep", "0.5")
    server.wait_for_health(200)
    [start] = server.starts()
    assert "--enable-sleep-mode" in start["argv"]
    health = until(server, "sleeping")
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
