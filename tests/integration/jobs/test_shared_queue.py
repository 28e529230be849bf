"""Several servers on one queue: two `server.py` processes given the same PostgreSQL
(`--jobs-db`) and data folder share a batch's lines; one is SIGKILLed mid-batch and the other
finishes it once the dead one's leases lapse, each `custom_id` answered exactly once."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import openai

from tests.fixtures.process import ServerProcess, install_launcher
from tests.integration.jobs.test_restarts import LINES, _wait, submit

ENV = {"FAKE_VLLM_RESPONSE_DELAY": "0.03"}


def _server(tmp: Path, name: str, url: str, data: Path) -> ServerProcess:
    home = tmp / name
    install_launcher(home / "bin", "vllm")
    args = ["--model", "tiny", "--jobs-lease", "2", "--batch-concurrency", "2", "--jobs-db", url]
    env = {**ENV, "QWEN3_ASR_DATA_DIR": str(data), "FAKE_VLLM_ASKED": str(home / "asked")}
    return ServerProcess(home, args, env)


def test_two_servers_share_a_batch_and_one_finishes_what_the_other_left(
    tmp_path: Path, postgres_url: str
) -> None:
    data = tmp_path / "shared-data"  # a volume both replicas mount
    first = _server(tmp_path, "a", postgres_url, data)
    second = _server(tmp_path, "b", postgres_url, data)
    try:
        first.wait_for_health(200)
        second.wait_for_health(200)
        client = openai.OpenAI(base_url=f"{first.url}/v1", api_key="unused", max_retries=0)
        batch, lines = submit(client, "json")
        assert _wait(client, batch.id, done=LINES // 4).status == "in_progress"
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait_exit()
        other = openai.OpenAI(base_url=f"{second.url}/v1", api_key="unused", max_retries=0)
        finished = _wait(other, batch.id, done=LINES + 1)
        assert finished.status == "completed", finished
        assert finished.request_counts is not None
        assert (finished.request_counts.completed, finished.request_counts.failed) == (LINES, 0)
        assert finished.output_file_id is not None
        output = other.files.content(finished.output_file_id).text.splitlines()
        answered = sorted(json.loads(line)["custom_id"] for line in output)
        assert answered == sorted(line["custom_id"] for line in lines)  # each exactly once
        asked = [len((tmp_path / name / "asked").read_text().splitlines()) for name in "ab"]
        assert min(asked) > 0, asked  # both servers ran lines of the one batch
        assert sum(asked) >= LINES
    finally:
        first.stop()
        second.stop()
