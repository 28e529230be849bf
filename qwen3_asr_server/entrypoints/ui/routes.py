"""The playground's routes: the page at `/`, its files under `/ui`, the headers that lock them.

Plain HTML, CSS and JavaScript (`static/`), no build step and no third-party origin, so it
works on a box without network. The page is a client like any other: it calls the public
API with the key the user gives it (kept in the browser), so the API's auth is unchanged and
the page itself needs none. Every answer here carries a Content-Security-Policy that allows
nothing inline and nothing from elsewhere, and forbids framing. They only ever read: GET and
HEAD, any other method OpenAI's 405 with `Allow`. `--no-ui` leaves these routes out altogether.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, request_response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...model.languages import SUPPORTED
from ..named import NamedMount, NamedRoute

STATIC = StaticFiles(packages=[(__package__ or __name__, "static")])
# `connect-src 'self'` takes in the WebSocket of the same host and port (CSP Level 3), `blob:`
# media is the file the user picked, played back from memory.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; media-src 'self' blob:; manifest-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "microphone=(self), camera=(), geolocation=()",
}
READ_ONLY = ("GET", "HEAD")  # the routes' methods; the static files allow these only too


class _Secured:
    """The playground's headers on every answer of the app it wraps."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k.decode() not in HEADERS]
                headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, secured)


async def _page(request: Request) -> Response:
    response = await STATIC.get_response("index.html", request.scope)
    if isinstance(response, FileResponse):
        response.headers["cache-control"] = "no-cache"
    return response


async def _languages(_: Request) -> Response:
    """Qwen3-ASR's languages for the page's pickers, from the one table the API uses."""
    return JSONResponse([{"code": each.code, "name": each.name} for each in SUPPORTED])


def playground() -> list[BaseRoute]:
    return [
        NamedRoute("/", _Secured(request_response(_page)), methods=READ_ONLY),
        NamedRoute("/ui/languages.json", _Secured(request_response(_languages)), methods=READ_ONLY),
        NamedMount("/ui", _Secured(STATIC), name="ui"),
    ]
