"""Optional bearer-token auth for the API routes (not /health or /metrics)."""

from __future__ import annotations

import secrets

from fastapi import Request
from pydantic import SecretStr
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection

from .errors import APIError
from .state import get_state

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def bearer(headers: Headers) -> str | None:
    """The token of an `Authorization: Bearer ...` header, if there is one."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def check_key(expected: SecretStr | None, token: str | None) -> None:
    """Pass if no key is configured or `token` matches it; else OpenAI's 401."""
    if expected is None:
        return
    if token is None:
        raise APIError(
            401,
            "You didn't provide an API key. Send it in an Authorization header using Bearer "
            "auth (Authorization: Bearer YOUR_KEY).",
            code="missing_api_key",
            headers=_CHALLENGE,
        )
    if not secrets.compare_digest(token.encode(), expected.get_secret_value().encode()):
        raise APIError(
            401, "Incorrect API key provided.", code="invalid_api_key", headers=_CHALLENGE
        )


def authorize(connection: HTTPConnection) -> None:
    """The bearer token of an HTTP request checked against the server's key (OpenAI's 401)."""
    check_key(get_state(connection).settings.api_key, bearer(connection.headers))


async def require_api_key(request: Request) -> None:
    """`authorize` as a FastAPI dependency, for the routes declared through FastAPI."""
    authorize(request)
