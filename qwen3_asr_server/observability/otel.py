"""`tracing.Tracing` on the OpenTelemetry SDK: a tracer provider of this server's own (the
process-wide one is left alone), its spans batched and sent in a thread by an OTLP exporter
over HTTP (protobuf) or gRPC, W3C trace context read from and written into headers.

A collector that cannot be reached costs bounded memory (the batch queue's 2,048 spans, the
oldest dropped), never a request's time (sending is the batch thread's), a count of the spans
lost in `qwen3_asr_trace_spans_dropped_total`, and at most one warning line a minute: the
exporters' own lines, one per failed batch, are silenced. The sampler is the SDK's, from
`OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (every span by default).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .metrics import Metrics
from .otlp import GRPC, SERVICE, Destination

logger = logging.getLogger(__name__)

KINDS = {
    "internal": trace.SpanKind.INTERNAL,
    "server": trace.SpanKind.SERVER,
    "client": trace.SpanKind.CLIENT,
}
WARN_EVERY_SECONDS = 60.0


class Counted(SpanExporter):
    """An exporter whose failures are counted, and said at most once a minute."""

    def __init__(self, inner: SpanExporter, metrics: Metrics, where: str) -> None:
        self.inner, self.metrics, self.where = inner, metrics, where
        self._warned = -WARN_EVERY_SECONDS

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # an exporter that raises loses its batch as one that fails does
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.metrics.trace_spans_dropped.inc(len(spans))
            now = time.monotonic()
            if now - self._warned >= WARN_EVERY_SECONDS:
                self._warned = now
                logger.warning(
                    "traces could not be sent to %s: %d spans dropped (counted in "
                    "qwen3_asr_trace_spans_dropped_total; said at most once a minute)",
                    self.where,
                    len(spans),
                )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def exporter(where: Destination) -> SpanExporter:
    """The SDK's OTLP exporter for `where`'s protocol (given no endpoint, it reads the
    standard variables itself)."""
    if where.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter(endpoint=where.endpoint)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=where.endpoint)


class Traces:
    """Tracing on: spans made by the SDK, sent where `where` says."""

    def __init__(self, where: Destination, metrics: Metrics, environ: Mapping[str, str]) -> None:
        # the exporters log every failed batch; `Counted` says it once a minute instead
        logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
        named = {} if environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: SERVICE}
        self._provider = TracerProvider(resource=Resource.create(named))
        sent = Counted(exporter(where), metrics, where.for_vllm)
        self._provider.add_span_processor(BatchSpanProcessor(sent))
        self._tracer = self._provider.get_tracer("qwen3_asr_server")
        self._propagator = TraceContextTextMapPropagator()

    @contextmanager
    def span(
        self,
        name: str,
        kind: str = "internal",
        attributes: Mapping[str, Any] | None = None,
        carrier: Mapping[str, str] | None = None,
        linked: Mapping[str, str] | None = None,
        ends: bool = True,
    ) -> Iterator[trace.Span]:
        parent = self._propagator.extract(carrier) if carrier is not None else None
        links = []
        if linked is not None:
            context = trace.get_current_span(self._propagator.extract(linked)).get_span_context()
            if context.is_valid:
                links.append(trace.Link(context))
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            kind=KINDS[kind],
            attributes=attributes,
            links=links,
            end_on_exit=ends,
        ) as span:
            yield span

    def inject(self, headers: MutableMapping[str, str]) -> None:
        self._propagator.inject(headers)

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        trace.get_current_span().add_event(name, attributes)

    def ids(self) -> tuple[str, str] | None:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return None
        return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)

    def shutdown(self) -> None:
        self._provider.shutdown()
