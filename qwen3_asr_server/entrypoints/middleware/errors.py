"""Errors told over HTTP: a `ServerError` as OpenAI's JSON answer (`response`), or as the
refusal of a WebSocket handshake (`send_error`), and the handlers that reshape the framework's
own errors (unknown route, wrong method, validation) into the same shape, so that nothing
reaches a client in another. The errors themselves, and their bodies, are `errors`', which
imports no web framework; what no handler catches becomes a 500 in `error_guard`.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from ...errors import APIError, ServerError, invalid

POLICY_VIOLATION = 1008  # the WebSocket close code of a refused handshake, without an answer
TRY_AGAIN_LATER = 1013  # and of one refused for now (busy, loading)
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})


def response(error: ServerError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


async def send_error(error: ServerError, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer an HTTP request with `error`, or refuse a WebSocket handshake with it: an HTTP
    answer where the server can send one (ASGI's denial-response extension), else a close
    (1013 for a 429 or 503, which a client may retry; else 1008) whose reason is the start of
    the message."""
    if scope["type"] == "websocket" and "websocket.http.response" not in scope.get(
        "extensions", {}
    ):
        reason = error.message[:120]
        code = TRY_AGAIN_LATER if error.status in (429, 503) else POLICY_VIOLATION
        await send({"type": "websocket.close", "code": code, "reason": reason})
        return
    await response(error)(scope, receive, send)


async def _server_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServerError)
    return response(exc)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        message = f"Invalid URL ({request.method} {request.url.path})"
    elif exc.status_code == 405:
        message = f"Method {request.method} is not allowed for {request.url.path}"
    else:
        message = str(exc.detail) or HTTPStatus(exc.status_code).phrase
    code = HTTPStatus(exc.status_code).phrase.lower().replace(" ", "_")
    return response(APIError(exc.status_code, message, code=code, headers=exc.headers))


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    location = [str(part) for part in first.get("loc", ()) if part not in _LOCATIONS]
    param = ".".join(location) or None
    message = first.get("msg", "Invalid request")
    if param:
        message = f"{message}: '{param}'"
    return response(invalid(message, param))


def install(app: FastAPI) -> None:
    app.add_exception_handler(ServerError, _server_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
