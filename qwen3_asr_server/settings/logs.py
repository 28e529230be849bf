"""The log's settings: how much it says, whether what was said is in it, in which shape; and
where traces go."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LoggingSettings(BaseModel):
    log_transcripts: bool = Field(
        False, description="Log the text of transcripts (off: only ids, sizes and timings)."
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info",
        description="Log level of the server (vLLM's own output is relayed as is); keys and "
        "tokens stay out of the log at every level.",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        description="text: one line per record, as before; json: one JSON object per line "
        "(time, level, logger, message, request_id, and trace_id and span_id inside a trace).",
    )
    otlp_traces_endpoint: str | None = Field(
        None,
        description="Send OpenTelemetry traces there (OTLP; http/protobuf unless "
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc), and have a launched vLLM send its own "
        "there too. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT turn "
        "tracing on as well; none of them: no tracing.",
        json_schema_extra={"metavar": "URL"},
    )
