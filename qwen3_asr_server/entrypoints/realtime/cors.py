"""CORS for the two routes a web app on another origin calls: minting an ephemeral key
(`/v1/realtime/client_secrets`) and sending a WebRTC call's offer (`/v1/realtime/calls`).

OpenAI's WebRTC guide has the page POST its offer with `Authorization` and
`Content-Type: application/sdp`: a browser sends that only after a CORS preflight, and hands
the page the SDP answer only if the answer allows its origin. The origins allowed are those
of `--allowed-origins` (which `entrypoints.middleware.origin` lets open Realtime sessions), no
others: a page of the server's own origin needs no CORS, and the rest of the API stays closed to
other sites' pages. Starlette's `CORSMiddleware` does the work; this picks the routes. It sits
outside the key check, so a preflight (which carries no key) is answered, and a refusal (a
401, a 429) can be read by the page.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ..middleware.origin import normal
from . import offers as calls

PATHS = frozenset({calls.PATH, "/v1/realtime/client_secrets"})


class RealtimeCORS:
    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origins=[each if each == "*" else normal(each) for each in allowed],
            allow_methods=["POST"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=["Location", "Retry-After"],
            max_age=600,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in PATHS:
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)
