"""Where traces go over OTLP: the endpoint and protocol that `--otlp-traces-endpoint` or the
SDK's standard variables name, and what a vLLM the server launches is told so that its spans
go there too (vLLM takes its endpoint as written, reads no `OTEL_EXPORTER_OTLP_ENDPOINT`, and
sends over gRPC unless told otherwise). Pure: no OpenTelemetry is imported here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SERVICE = "qwen3-asr-server"  # the service name, unless OTEL_SERVICE_NAME says another
VLLM_SERVICE = "vllm"  # a launched vLLM's
HTTP, GRPC = "http/protobuf", "grpc"
FLAG = "--otlp-traces-endpoint"  # vLLM's flag, and ours


@dataclass(frozen=True)
class Destination:
    """Where traces go. `endpoint` is what this server's exporter is given (None: the SDK reads
    the `OTEL_EXPORTER_OTLP_*` variables itself); `for_vllm` is the URL a launched vLLM gets,
    which takes it as written, reads no `OTEL_EXPORTER_OTLP_ENDPOINT` and adds no path."""

    endpoint: str | None
    protocol: str
    for_vllm: str


def destination(flag: str | None, environ: Mapping[str, str]) -> Destination | None:
    """Where `--otlp-traces-endpoint` (`flag`) or the standard variables send traces; None:
    tracing is off."""
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or HTTP
    )
    if flag:
        return Destination(flag, protocol, flag)
    if traces := environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return Destination(None, protocol, traces)
    if base := environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return Destination(
            None, protocol, base if protocol == GRPC else f"{base.rstrip('/')}/v1/traces"
        )
    return None


def vllm_launch(
    where: Destination | None, vllm_args: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    """The flags and environment a launched vLLM exports its spans with: to the same place, in
    the same protocol, under a service name of its own. Nothing when tracing is off, or when
    the user gave vLLM an endpoint of their own."""
    if where is None or any(arg.split("=", 1)[0] == FLAG for arg in vllm_args):
        return [], {}
    environment = {"OTEL_SERVICE_NAME": VLLM_SERVICE}
    environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = where.protocol
    return [FLAG, where.for_vllm], environment
