"""A batch outlives its server: `server.py` is SIGKILLed in the middle of a 200-line batch and
started again on the same data folder; the batch completes, each `custom_id` answered
exactly once."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import openai
from openai.types import Batch

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, install_launcher

LINES = 200
ARGS = ["--model", "tiny", "--jobs-lease", "2", "--batch-concurrency", "2"]
ENV = {"FAKE_VLLM_RESPONSE_DELAY": "0.03", "FAKE_VLLM_DESCRIBE": "1"}


def _client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def submit(client: openai.OpenAI, response_format: str) -> tuple[Batch, list[dict[str, Any]]]:
    """A batch of LINES lines, each the same short clip, created; and its lines."""
    clip = client.files.create(file=("clip.wav", wav(0.5)), purpose="user_data")
    lines = [
        {"custom_id": f"call-{i}", "method": "POST", "url": "/v1/audio/transcriptions",
         "body": {"file": clip.id, "response_format": response_format}}
        for i in range(LINES)
    ]  # fmt: skip
    return _create(client, lines), lines


def _create(client: openai.OpenAI, lines: list[dict[str, Any]]) -> Batch:
    """A batch of `lines` created, from an input file of them."""
    text = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    source = client.files.create(file=("calls.jsonl", text), purpose="batch")
    return client.batches.create(
        input_file_id=source.id,
        endpoint="/v1/audio/transcriptions",  # type: ignore[arg-type]
        completion_window="24h",
    )


def _wait(client: openai.OpenAI, batch_id: str, done: int) -> Batch:
    deadline = time.monotonic() + 120
    while True:
        batch = client.batches.retrieve(batch_id)
        counts = batch.request_counts
        if batch.status in ("completed", "failed") or (counts and counts.completed >= done):
            return batch
        assert time.monotonic() < deadline, batch
        time.sleep(0.1)


def test_a_batch_completes_after_its_server_is_killed_and_started_again(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(tmp_path, ARGS, ENV)
    try:
        server.wait_for_health(200)
        client = _client(server)
        batch, lines = submit(client, "text")
        seen = _wait(client, batch.id, done=LINES // 4)
        assert seen.status == "in_progress", seen
        os.kill(server.proc.pid, signal.SIGKILL)
        server.wait_exit()
    finally:
        server.stop()
    again = ServerProcess(tmp_path, ARGS, ENV, port=server.port)
    try:
        again.wait_for_health(200)
        client = _client(again)
        finished = _wait(client, batch.id, done=LINES + 1)
        assert finished.status == "completed", finished
        assert finished.request_counts is not None
        assert (finished.request_counts.completed, finished.request_counts.failed) == (LINES, 0)
        assert finished.output_file_id is not None
        output = client.files.content(finished.output_file_id).text.splitlines()
        answered = [json.loads(line)["custom_id"] for line in output]
        assert sorted(answered) == sorted(line["custom_id"] for line in lines)  # each once
        bodies = {json.loads(line)["response"]["body"] for line in output}
        assert bodies == {"Heard 0.50 s.\n"}, bodies
    finally:
        again.stop()


def test_a_batch_runs_on_a_server_with_worker_processes(tmp_path: Path) -> None:
    """With --workers 2 every worker process runs a runner on the one SQLite database: their
    claims share it, and the batch completes with each custom_id once."""
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(tmp_path, [*ARGS, "--workers", "2"], ENV)
    try:
        server.wait_for_health(200)
        client = _client(server)
        batch, lines = submit(client, "text")
        finished = _wait(client, batch.id, done=LINES + 1)
        assert finished.status == "completed", finished
        assert finished.request_counts is not None
        assert finished.request_counts.completed == LINES
        assert finished.output_file_id is not None
        output = client.files.content(finished.output_file_id).text.splitlines()
        assert sorted(json.loads(line)["custom_id"] for line in output) == sorted(
            line["custom_id"] for line in lines
        )
    finally:
        server.stop()


def test_a_line_that_kills_its_server_fails_alone_after_the_attempts_allowed(
    tmp_path: Path,
) -> None:
    """One line's request kills the server each time it runs (the stand-in SIGKILLs it). The
    server, started again each time, takes it up --batch-max-attempts times; the next time the
    line fails alone, with its own code, and the batch completes with the other lines."""
    install_launcher(tmp_path / "bin", "vllm")
    args = ["--model", "tiny", "--jobs-lease", "1"]
    env = {"FAKE_VLLM_KILL_SERVER_ON": "kill the server", "QWEN3_ASR_BATCH_MAX_ATTEMPTS": "2"}
    port, deaths, batch_id, finished = 0, 0, None, None
    while finished is None:
        assert deaths <= 2, "the line was taken up again past --batch-max-attempts"
        server = ServerProcess(tmp_path, args, env, port=port)
        port = server.port
        try:
            server.wait_for_health(200)
            client = _client(server)
            batch_id = batch_id or _submit_with_a_killer(client)
            finished = _until_done_or_dead(client, server, batch_id)
        finally:
            server.stop()
        deaths += finished is None
    assert deaths == 2
    assert finished.status == "completed", finished
    assert finished.request_counts is not None
    counts = finished.request_counts
    assert (counts.total, counts.completed, counts.failed) == (5, 4, 1)
    assert finished.error_file_id is not None
    again = ServerProcess(tmp_path, args, port=port)
    try:
        again.wait_for_health(200)
        client = _client(again)
        [failed] = [
            json.loads(line)
            for line in client.files.content(finished.error_file_id).text.splitlines()
        ]
        assert failed["custom_id"] == "killer"
        assert failed["response"] is None
        assert failed["error"]["code"] == "too_many_attempts"
        assert "--batch-max-attempts 2" in failed["error"]["message"]
        assert finished.output_file_id is not None
        output = client.files.content(finished.output_file_id).text.splitlines()
        assert sorted(json.loads(line)["custom_id"] for line in output) == [
            f"call-{i}" for i in range(4)
        ]
    finally:
        again.stop()


def _submit_with_a_killer(client: openai.OpenAI) -> str:
    """A batch of five lines, the third one's prompt the text that kills the server."""
    clip = client.files.create(file=("clip.wav", wav(0.5)), purpose="user_data")
    lines = [
        {"custom_id": f"call-{i}", "method": "POST", "url": "/v1/audio/transcriptions",
         "body": {"file": clip.id}}
        for i in range(4)
    ]  # fmt: skip
    killer = {
        **lines[0],
        "custom_id": "killer",
        "body": {"file": clip.id, "prompt": "kill the server"},
    }
    lines.insert(2, killer)
    return _create(client, lines).id


def _until_done_or_dead(
    client: openai.OpenAI, server: ServerProcess, batch_id: str
) -> Batch | None:
    """The batch once it ended, or None once its server died."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            return None
        try:
            batch = client.batches.retrieve(batch_id)
        except openai.APIConnectionError:
            continue
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        time.sleep(0.1)
    raise AssertionError(
        f"batch {batch_id} neither ended nor killed its server:\n{server.output()}"
    )
