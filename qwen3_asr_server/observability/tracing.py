"""Traces, with OpenTelemetry: off unless an endpoint is given (`--otlp-traces-endpoint`, or
the SDK's own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`).

The server's code speaks to `Tracing` only. With tracing off it is `OFF`, whose every call does
nothing, and the OpenTelemetry SDK is never imported; with it on, `observability.otel` (the SDK,
its OTLP exporters) is. A span opened here is the current one for what runs inside it, tasks
started there included (OpenTelemetry keeps it in a context variable), so a piece's engine
request lands under its transcription without being handed a parent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Literal, Protocol

from .otlp import destination

if TYPE_CHECKING:
    from .metrics import Metrics

Kind = Literal["internal", "server", "client"]
Value = str | bool | int | float
Attributes = Mapping[str, Value]


class Span(Protocol):
    def set_attribute(self, key: str, value: Value) -> None: ...
    def add_event(self, name: str, attributes: Attributes | None = None) -> None: ...
    def update_name(self, name: str) -> None: ...
    def end(self) -> None: ...


class Tracing(Protocol):
    """Where spans go. `span` opens one as the current span; `carrier` (an incoming request's
    headers) continues the trace its `traceparent` names; `linked` (headers kept from another
    request) links the span to that request's span without being its child; `ends=False`
    leaves it open when the block ends, for what outlives it (a stream) to `end()`."""

    def span(
        self,
        name: str,
        kind: Kind = "internal",
        attributes: Attributes | None = None,
        carrier: Mapping[str, str] | None = None,
        linked: Mapping[str, str] | None = None,
        ends: bool = True,
    ) -> AbstractContextManager[Span]: ...

    def inject(self, headers: MutableMapping[str, str]) -> None:
        """`headers` given the current span's `traceparent` (a request to vLLM)."""

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        """An event on the current span."""

    def ids(self) -> tuple[str, str] | None:
        """The current trace's id and span's id, in hex; None outside a trace."""

    def shutdown(self) -> None:
        """The spans still queued sent (within a few seconds), then nothing more."""


class _Quiet:
    """A span that records nothing."""

    def set_attribute(self, key: str, value: Value) -> None:
        return None

    def add_event(self, name: str, attributes: Attributes | None = None) -> None:
        return None

    def update_name(self, name: str) -> None:
        return None

    def end(self) -> None:
        return None


class Off:
    """Tracing off: nothing is recorded, nothing sent, nothing imported."""

    def span(
        self,
        name: str,
        kind: Kind = "internal",
        attributes: Attributes | None = None,
        carrier: Mapping[str, str] | None = None,
        linked: Mapping[str, str] | None = None,
        ends: bool = True,
    ) -> AbstractContextManager[Span]:
        return nullcontext(QUIET)

    def inject(self, headers: MutableMapping[str, str]) -> None:
        return None

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        return None

    def ids(self) -> tuple[str, str] | None:
        return None

    def shutdown(self) -> None:
        return None


QUIET = _Quiet()
OFF = Off()


def start(flag: str | None, metrics: Metrics, environ: Mapping[str, str] = os.environ) -> Tracing:
    """Tracing as the settings and the environment ask for it."""
    where = destination(flag, environ)
    if where is None:
        return OFF
    from .otel import Traces  # the SDK, only when tracing is on

    return Traces(where, metrics, environ)
