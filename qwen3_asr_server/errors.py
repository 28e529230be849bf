"""Every error a client sees, in OpenAI's shape: {"error": {message, type, param, code}}.

Routes raise `APIError`; the handlers here also reshape the framework's own errors (unknown
route, wrong method, validation) so that nothing reaches a client in another shape. What no
handler catches becomes a 500 in `middleware.error_guard`.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

RETRY_AFTER_SECONDS = 5
CLIENT_CLOSED = 499  # nginx's status for a client that left before its answer
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})


class APIError(Exception):
    """An error with everything needed to answer it."""

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
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or error_type(status)
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code)


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


def response(error: APIError) -> JSONResponse:
    return JSONResponse(
        error.body(),
        status_code=error.status,
        headers=error.headers,
    )


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, APIError)
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
    app.add_exception_handler(APIError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
