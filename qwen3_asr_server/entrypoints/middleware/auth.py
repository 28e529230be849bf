"""The API key, checked for every route but those on one list: closed by default.

With `--api-key` set, a request (HTTP or a WebSocket handshake) must carry it as
`Authorization: Bearer <key>`; browsers, which cannot set headers on a WebSocket, may offer
it as the subprotocol `openai-insecure-api-key.<key>`, as OpenAI's Realtime API takes it. A
route is open only if its path template is in `OPEN`; any other, a route added tomorrow
included, answers OpenAI's 401 without the key. Paths that match no route pass on to the
router, whose 404 or 405 says nothing a caller without the key could use.

The route is only looked for when the key is missing or wrong: a request that carries the
right key, or a server without one, pays for one header lookup.

An ephemeral key (`ek_...`, minted at `POST /v1/realtime/client_secrets`, see
`entrypoints.middleware.ephemeral_keys`) stands for the key on the routes of `EPHEMERAL` only, while
it is valid: a browser or a phone holds one to open a Realtime session, and can do nothing else with
it.
"""

from __future__ import annotations

import secrets
import time

from pydantic import SecretStr
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from .ephemeral_keys import ClientSecrets, is_ephemeral
from .errors import send_error

# The routes anyone may call: probes and scrapes (they hold no one's data), the playground's
# page, files and language list (the page asks for the key before it calls the API), and the
# API's own description (its OpenAPI schema; FastAPI's two readers of it, /docs and /redoc,
# are left out of the app: they load scripts from a CDN, on the page's origin).
OPEN = frozenset(
    {
        "/health",
        "/livez",
        "/metrics",
        "/",
        "/ui",
        "/ui/languages.json",
        "/openapi.json",
    }
)
# The routes an ephemeral key opens: a Realtime session, over a WebSocket or a WebRTC call.
EPHEMERAL = frozenset({"/v1/realtime", "/v1/realtime/calls"})
KEY_PROTOCOL = "openai-insecure-api-key."  # how browsers, which cannot set headers, send it
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def bearer(scope: Scope) -> str | None:
    """The bearer token of the request, or of a WebSocket's offered subprotocols."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            break
    if scope["type"] == "websocket":
        offered: list[str] = scope.get("subprotocols", [])
        keys = (each[len(KEY_PROTOCOL) :] for each in offered if each.startswith(KEY_PROTOCOL))
        return next(keys, None)
    return None


def refusal(expected: SecretStr, token: str | None) -> APIError | None:
    """OpenAI's 401 when `token` is not the key; None when it is."""
    if token is None:
        return APIError(
            401,
            "You didn't provide an API key. Send it in an Authorization header using Bearer "
            "auth (Authorization: Bearer YOUR_KEY).",
            code="missing_api_key",
            headers=_CHALLENGE,
        )
    if not secrets.compare_digest(token.encode(), expected.get_secret_value().encode()):
        return APIError(
            401, "Incorrect API key provided.", code="invalid_api_key", headers=_CHALLENGE
        )
    return None


def _route(routes: list[BaseRoute], scope: Scope) -> BaseRoute | None:
    """The route that would answer the request, as the router will find it."""
    for route in routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route
    return None


class Authentication:
    """ASGI middleware: OpenAI's 401 for any route outside `OPEN` without the key."""

    def __init__(self, app: ASGIApp, key: SecretStr | None, routes: list[BaseRoute]) -> None:
        self.app = app
        self.key = key
        self.routes = routes  # the app's own list: routes added to it later are closed too
        self.secrets = ClientSecrets(key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.key is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        token = bearer(scope)
        error = refusal(self.key, token)
        if error is not None:
            route = _route(self.routes, scope)
            path = getattr(route, "path", None)
            if is_ephemeral(token) and path not in OPEN:
                error = self._ephemeral(token, path)
            if error is not None and route is not None and path not in OPEN:
                scope["route"] = route  # so the metrics and the log name it
                await send_error(error, scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _ephemeral(self, token: str, path: str | None) -> APIError | None:
        """None when an ephemeral key opens `path`; else the 401 that says why not."""
        if path not in EPHEMERAL:
            return APIError(
                401,
                "An ephemeral key (ek_...) opens Realtime sessions only; this route takes the "
                "API key.",
                code="invalid_api_key",
                headers=_CHALLENGE,
            )
        try:
            self.secrets.open(token, time.time())
        except APIError as refused:  # expired, or not minted here
            return refused
        return None
