"""The API key, checked for every route but those on one list: closed by default.

With `--api-key` or `--keys-file` set, a request (HTTP or a WebSocket handshake) must carry a
key as `Authorization: Bearer <key>`; browsers, which cannot set headers on a WebSocket, may offer
it as the subprotocol `openai-insecure-api-key.<key>`, as OpenAI's Realtime API takes it. A
route is open only if its path template is in `OPEN`; any other, a route added tomorrow
included, answers OpenAI's 401 without the key. Paths that match no route pass on to the
router, whose 404 or 405 says nothing a caller without the key could use.

The keys are `--api-key` and those of `--keys-file` (`entrypoints.middleware.keys`), as this
process last read them: a key removed from the file is refused from its next request on. The
route is only looked for when the key is missing or wrong: a request that carries a key pays
for one header lookup, one SHA-256 and one dictionary lookup; a server without keys, for none.

An ephemeral key (`ek_...`, minted at `POST /v1/realtime/client_secrets`, see
`entrypoints.middleware.ephemeral_keys`) stands for the key that minted it on the routes of
`EPHEMERAL` only, while it is valid and that key is: a browser or a phone holds one to open a
Realtime session, and can do nothing else with it.
"""

from __future__ import annotations

import time

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from ...observability.usage import CALLER, Caller
from .ephemeral_keys import ClientSecrets, Grant, is_ephemeral
from .errors import send_error
from .keys import Key, Keyring, Keys

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
_GRANT = "ephemeral_grant"  # the scope's key for an opened ephemeral key's grant (`opened`)


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


def caller(scope: Scope) -> Key | None:
    """The key a request came with (for an ephemeral key, the key that minted it); None on a
    server with no key."""
    found = scope.get("auth")
    return found if isinstance(found, Key) else None


def opened(scope: Scope, token: str, keyring: Keyring) -> Grant:
    """What `token`, the ephemeral key a request came with, grants: as the middleware opened
    it (a server with keys), else opened now; OpenAI's 401 when it is expired or not this
    server's."""
    found = scope.get(_GRANT)
    if isinstance(found, Grant):
        return found
    return ClientSecrets(keyring).open(token, time.time())


def refusal(token: str | None) -> APIError:
    """OpenAI's 401 for a request with no key, or one that is none of the keys."""
    if token is None:
        return APIError(
            401,
            "You didn't provide an API key. Send it in an Authorization header using Bearer "
            "auth (Authorization: Bearer YOUR_KEY).",
            code="missing_api_key",
            headers=_CHALLENGE,
        )
    return APIError(401, "Incorrect API key provided.", code="invalid_api_key", headers=_CHALLENGE)


def _route(routes: list[BaseRoute], scope: Scope) -> BaseRoute | None:
    """The route that would answer the request, as the router will find it."""
    for route in routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route
    return None


class Authentication:
    """ASGI middleware: OpenAI's 401 for any route outside `OPEN` without a key; the key a
    request came with goes into its scope's `auth` (`caller`)."""

    def __init__(self, app: ASGIApp, keys: Keys, routes: list[BaseRoute]) -> None:
        self.app = app
        self.keys = keys
        self.routes = routes  # the app's own list: routes added to it later are closed too

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keyring = self.keys.current
        if not keyring.closed or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        token = bearer(scope)
        key = keyring.find(token) if token is not None and not is_ephemeral(token) else None
        if key is None:
            route = _route(self.routes, scope)
            path = getattr(route, "path", None)
            error: APIError | None = refusal(token)
            if is_ephemeral(token) and path not in OPEN:
                error, key = self._ephemeral(keyring, token, path, scope)
            if error is not None and route is not None and path not in OPEN:
                scope["route"] = route  # so the metrics and the log name it
                await send_error(error, scope, receive, send)
                return
        scope["auth"] = key
        if key is not None:  # whose usage the request's work is
            CALLER.set(Caller(key.name, key.project))
        await self.app(scope, receive, send)

    def _ephemeral(
        self, keyring: Keyring, token: str, path: str | None, scope: Scope
    ) -> tuple[APIError | None, Key | None]:
        """The key that minted an ephemeral key when it opens `path` (its grant kept in
        `scope` for the route, `opened`); else the 401 that says why not."""
        if path not in EPHEMERAL:
            return APIError(
                401,
                "An ephemeral key (ek_...) opens Realtime sessions only; this route takes the "
                "API key.",
                code="invalid_api_key",
                headers=_CHALLENGE,
            ), None
        try:
            grant = ClientSecrets(keyring).open(token, time.time())
        except APIError as refused:  # expired, or not minted here
            return refused, None
        scope[_GRANT] = grant
        return None, keyring.named(grant.key) if grant.key is not None else None
