"""Every error the server raises on purpose, under one root, and the one way each is told.

`ServerError` is the root: a message, and what a client is told with it (an HTTP status and
OpenAI's error fields: type, param, code, headers). Its kinds:

- `APIError`: one request is answered with an error (a 400 about a field, a 401, a 503 while
  vLLM loads, ...);
- `EventError`: one Realtime client event is refused; the session goes on;
- `LaunchError`: vLLM cannot be started as configured; the message says what to do;
- `FatalBackendError`: a backend cannot be made to serve; the message is the server's last word.

An error is serialised once, at the edge: `entrypoints.middleware.errors` for HTTP (its `response`,
and `send_error`, which refuses a WebSocket handshake too; its handlers also reshape the
framework's own errors), `entrypoints.realtime.server_events.error` for a Realtime session. This
module imports nothing but the standard library, so that the core, which raises these errors, loads
no web framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MIB = 1 << 20  # the unit of the *_mb settings, which the messages say too
RETRY_AFTER_SECONDS = 5
CLIENT_CLOSED = 499  # nginx's status for a client that left before its answer
CLOSE = {"Connection": "close"}


def error_type(status: int) -> str:
    """OpenAI's error type for an HTTP status (it uses these two for 401 and 404 too)."""
    return "server_error" if status >= 500 else "invalid_request_error"


def error_body(
    message: str,
    type: str,
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


class ServerError(Exception):
    """The root: what went wrong, and how a client is told (see the module)."""

    status = 500

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str | None = None,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else self.status
        self.type = type or error_type(self.status)
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code)


class APIError(ServerError):
    """An error that answers one request."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str | None = None,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, status=status, type=type, param=param, code=code, headers=headers)


class EventError(APIError):
    """A Realtime client event the server refuses: an `error` event; the session goes on."""

    def __init__(self, message: str, code: str, param: str | None = None) -> None:
        super().__init__(400, message, param=param, code=code)


class LaunchError(ServerError):
    """vLLM cannot be started at all; the message says what to do."""

    status = 503


class FatalBackendError(ServerError):
    """The backend cannot be made to serve; the message is the server's last word."""

    status = 503


def invalid(message: str, param: str | None, code: str = "invalid_value") -> APIError:
    """A 400 about one request field."""
    return APIError(400, message, param=param, code=code)


def unavailable(message: str) -> APIError:
    """A 503 that tells the client when to try again."""
    return APIError(
        503,
        message,
        code="backend_unavailable",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def _too_large(message: str, seen: int | None, **fields: str) -> APIError:
    """A 413, whose `message` says `{read}` where the bytes sent go; the client is told to
    close: the rest of its body is not read to reuse the connection."""
    read = f" ({seen} bytes sent)" if seen is not None else ""
    return APIError(413, message.format(read=read), headers=CLOSE, **fields)


def too_large(limit: int, seen: int | None = None) -> APIError:
    """An upload over `--max-upload-mb` (`seen`: the bytes it has)."""
    return _too_large(
        f"Maximum upload size exceeded: the audio file may be at most {limit // MIB} MB{{read}} "
        "(--max-upload-mb). Compress it (e.g. to Opus or MP3) or split it.",
        seen,
        param="file",
        code="file_too_large",
    )


def json_too_large(limit: int, seen: int | None = None) -> APIError:
    """A JSON body over `--max-json-mb`."""
    return _too_large(
        f"The request body is too large: a JSON body may be at most {limit / MIB:g} MB{{read}} "
        "(--max-json-mb). Send long audio as a file to /v1/audio/transcriptions instead.",
        seen,
        code="request_too_large",
    )


def client_closed() -> APIError:
    """Nobody reads this answer: it tells the access log and the metrics the client left."""
    return APIError(CLIENT_CLOSED, "Client closed the request.")


def model_not_found(model: str) -> APIError:
    return APIError(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        param="model",
        code="model_not_found",
    )
