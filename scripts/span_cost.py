#!/usr/bin/env python3
"""What OpenTelemetry's Python SDK costs for the spans of one short request, in isolation.

  python scripts/span_cost.py [--requests 20000] [--json OUT]

A short clip's request has two spans (`docs/operations/observability.md`): the server span,
with the HTTP attributes and this server's own, and its engine request's client span, with an
event and a `traceparent` injected. This makes them `--requests` times with the SDK as the
server does (its own tracer provider, every span sampled, a batch processor) and times the
calling thread's CPU; then it encodes them into OTLP protobuf as the exporter does, 512 at a
time, and times that. No server, no network, one warm loop: a floor under what tracing adds to
a request in the server (`scripts/overhead.py --capacity --traces`), where the same work runs
among everything else a request does. Needs the `[tracing]` extra (the test environment has it).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

BATCH = 512  # the batch processor's export size


class Kept(SpanExporter):
    """Keeps what it is given, for the encoding to time."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def request(tracer: trace.Tracer, propagator: TraceContextTextMapPropagator) -> None:
    """One short request's spans, as the server makes them."""
    attributes = {
        "http.request.method": "POST",
        "url.path": "/v1/audio/transcriptions",
        "url.scheme": "http",
        "network.protocol.name": "http",
        "user_agent.original": "OpenAI/Python 2.8.1",
    }
    context = propagator.extract({})
    kind = trace.SpanKind.SERVER
    with tracer.start_as_current_span("POST", context, kind, attributes) as server:
        engine_kind, method = trace.SpanKind.CLIENT, {"http.request.method": "POST"}
        with tracer.start_as_current_span("POST /v1/chat/completions", None, engine_kind, method):
            trace.get_current_span().add_event("engine awake, slot taken")
            headers: dict[str, str] = {}
            propagator.inject(headers)
        server.set_attribute("http.response.status_code", 200)
        server.update_name("POST /v1/audio/transcriptions")
        server.set_attribute("http.route", "/v1/audio/transcriptions")
        server.set_attribute("qwen3_asr.request_id", "0123456789abcdef0123456789abcdef")
        server.set_attribute("qwen3_asr.audio_seconds", 5.0)


def measure(requests: int) -> dict[str, float]:
    kept = Kept()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(kept, max_queue_size=2 * requests + BATCH))
    tracer, propagator = provider.get_tracer("span_cost"), TraceContextTextMapPropagator()
    for _ in range(min(requests, 1000)):  # warm
        request(tracer, propagator)
    began = time.thread_time()
    for _ in range(requests):
        request(tracer, propagator)
    recording = time.thread_time() - began
    provider.shutdown()  # every span handed to `kept`
    spans = kept.spans[-2 * requests :]
    began = time.thread_time()
    for start in range(0, len(spans), BATCH):
        encode_spans(spans[start : start + BATCH]).SerializeToString()
    encoding = time.thread_time() - began
    return {
        "requests": requests,
        "recording_us_per_request": round(recording / requests * 1e6, 1),
        "encoding_us_per_request": round(encoding / requests * 1e6, 1),
        "total_us_per_request": round((recording + encoding) / requests * 1e6, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000, help="(default: 20000)")
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.requests)
    print(
        f"two spans a request, every one sampled: recording {figures['recording_us_per_request']}"
        f" us, encoding {figures['encoding_us_per_request']} us, together "
        f"{figures['total_us_per_request']} us"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
