"""Where traces go, from `--otlp-traces-endpoint` or the standard variables, and what a vLLM
the server launches is told so that its spans go there too (vLLM takes its endpoint as
written, reads no OTEL_EXPORTER_OTLP_ENDPOINT and sends over gRPC unless told otherwise)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from qwen3_asr_server.backend import launch
from qwen3_asr_server.observability.otlp import Destination, destination, vllm_launch
from qwen3_asr_server.serving.cli import parse_args
from tests.fixtures.process import REPO

COLLECTOR = "http://collector:4318"


def test_no_endpoint_is_no_tracing() -> None:
    assert destination(None, {}) is None
    assert destination("", {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}) is None
    assert vllm_launch(None, []) == ([], {})


def test_the_flag_is_taken_as_written_by_both() -> None:
    found = destination(f"{COLLECTOR}/v1/traces", {})
    assert found == Destination(f"{COLLECTOR}/v1/traces", "http/protobuf", f"{COLLECTOR}/v1/traces")
    assert vllm_launch(found, []) == (
        ["--otlp-traces-endpoint", f"{COLLECTOR}/v1/traces"],
        {"OTEL_SERVICE_NAME": "vllm", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
    )


def test_the_standard_variables_turn_it_on_and_vllm_gets_the_path_it_does_not_add() -> None:
    base = destination(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": f"{COLLECTOR}/"})
    assert base == Destination(None, "http/protobuf", f"{COLLECTOR}/v1/traces")
    grpc = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}
    grpc["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
    assert destination(None, grpc) == Destination(None, "grpc", "http://collector:4317")
    own = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x", **grpc}
    own["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    assert destination(None, own) == Destination(None, "http/protobuf", "http://t:1/x")


def test_a_launched_vllm_and_aligner_export_to_the_same_place_unless_told_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(launch, "_program", lambda cpu: (["vllm", "serve"], "vllm"))
    settings = parse_args(["--otlp-traces-endpoint", COLLECTOR, "--aligner", "a"])[0]
    command = launch.build(settings, 1, [], {})
    at = command.argv.index("--otlp-traces-endpoint")
    assert command.argv[at + 1] == COLLECTOR
    assert command.env["OTEL_SERVICE_NAME"] == "vllm"
    aligner = launch.build_aligner(settings, 2, {})
    assert COLLECTOR in aligner.argv
    theirs = launch.build(settings, 1, ["--otlp-traces-endpoint=http://own:4317"], {})
    assert theirs.argv.count("--otlp-traces-endpoint") == 0  # theirs, passed on as given
    assert "--otlp-traces-endpoint=http://own:4317" in theirs.argv
    assert "OTEL_SERVICE_NAME" not in theirs.env
    plain = launch.build(parse_args([])[0], 1, [], {})
    assert "--otlp-traces-endpoint" not in plain.argv


def test_with_tracing_off_the_server_imports_no_opentelemetry_sdk() -> None:
    """An app made and asked for /livez, in a fresh interpreter: none of the SDK nor its
    exporters is loaded (FastAPI itself loads OpenTelemetry's API, a few small modules)."""
    script = textwrap.dedent(
        """
        import sys
        from fastapi.testclient import TestClient
        from qwen3_asr_server.app import create_app
        from qwen3_asr_server.settings.composite import Settings
        app = create_app(Settings(model="m", backend_url="http://127.0.0.1:9"))
        with TestClient(app) as client:
            client.get("/livez")
        loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk",
            "opentelemetry.exporter", "qwen3_asr_server.observability.otel")))
        print(loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
