"""`--log-format json`: `server.py` writes one JSON object per line, and the access log's line
of a traced request carries its request id (the client's `x-request-id`) and the ids of its
trace and span, as the collector received them: a log line and a trace find each other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.fixtures.audio import wav
from tests.fixtures.collector import Collector
from tests.fixtures.harness import MODEL
from tests.fixtures.process import ServerProcess
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.integration.observability.test_traces import TRANSCRIBE, collector, named

__all__ = ["collector"]  # the fixture


def test_json_lines_carry_the_request_and_its_trace(collector: Collector, tmp_path: Path) -> None:
    backend = ThreadedServer(StandIn(MODEL).app).start()
    args = ["--model", MODEL, "--backend-url", backend.url, "--log-format", "json"]
    server = ServerProcess(
        tmp_path,
        [*args, "--otlp-traces-endpoint", collector.url],
        {"OTEL_BSP_SCHEDULE_DELAY": "50"},
    )
    try:
        server.wait_for_health(200)
        answer = httpx.post(
            f"{server.url}/v1/audio/transcriptions",
            files={"file": ("a.wav", wav(1.0))},
            data={"model": MODEL},
            timeout=60,
        )
        assert answer.status_code == 200
        spans = collector.wait(lambda seen: bool(named(seen, TRANSCRIBE)))
    finally:
        server.stop()
        backend.stop()
    lines: list[dict[str, Any]] = [json.loads(line) for line in server.output().splitlines()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    access = [line for line in lines if line.get("path") == "/v1/audio/transcriptions"]
    (line,) = access
    (front,) = named(spans, TRANSCRIBE)
    assert line["logger"] == "qwen3_asr_server.access"
    assert line["request_id"] == answer.headers["x-request-id"]
    assert (line["trace_id"], line["span_id"]) == (front.trace_id, front.span_id)
    assert (line["method"], line["status"]) == ("POST", 200)
    assert line["duration_ms"] > 0
