"""The log's shape (`--log-format`): `text`, one line per record as it always was, or `json`,
one JSON object per line for a log shipper: `time`, `level`, `logger`, `message`, the
`request_id` of the request it was said for (the client's `x-request-id`), the `trace_id`
and `span_id` inside a trace, and the fields a record carries (the access log's `method`,
`path`, `status`, `duration_ms`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime

import orjson

from .log_redaction import LOGGERS  # whose handlers write the server's log

# the request being served, set by the request-id middleware for all that runs inside it
REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
FIELDS = "fields"  # a record's `extra` key for fields of its own


def no_trace() -> tuple[str, str] | None:
    return None


class JsonLines(logging.Formatter):
    """A record as one line of JSON. `ids` finds the current trace's ids (`Tracing.ids`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: Callable[[], tuple[str, str] | None] = no_trace

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, object] = {
            "time": when.isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id is not None:
            entry["request_id"] = request_id
        ids = self.ids()
        if ids is not None:
            entry["trace_id"], entry["span_id"] = ids
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def _handlers() -> list[logging.Handler]:
    return [handler for name in LOGGERS for handler in logging.getLogger(name).handlers]


def install() -> None:
    """JSON lines from every handler of the server's loggers: called once logging is
    configured, and again once uvicorn has configured its own."""
    for handler in _handlers():
        if not isinstance(handler.formatter, JsonLines):
            handler.setFormatter(JsonLines())


def follow(ids: Callable[[], tuple[str, str] | None]) -> None:
    """The JSON lines given the trace ids `ids` finds (tracing on)."""
    for handler in _handlers():
        if isinstance(handler.formatter, JsonLines):
            handler.formatter.ids = ids
