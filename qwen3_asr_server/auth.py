"""Optional bearer-token auth for the API routes (not /health or /metrics)."""

from __future__ import annotations

import secrets

from fastapi import Request

from .errors import APIError
from .state import get_state

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


async def require_api_key(request: Request) -> None:
    """FastAPI dependency: pass if no key is configured or the bearer token matches it."""
    expected = get_state(request).settings.api_key
    if expected is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise APIError(
            401,
            "You didn't provide an API key. Send it in an Authorization header using Bearer "
            "auth (Authorization: Bearer YOUR_KEY).",
            code="missing_api_key",
            headers=_CHALLENGE,
        )
    if not secrets.compare_digest(token.strip().encode(), expected.get_secret_value().encode()):
        raise APIError(
            401, "Incorrect API key provided.", code="invalid_api_key", headers=_CHALLENGE
        )
