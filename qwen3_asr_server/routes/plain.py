"""Routes that skip FastAPI's per-request machinery, for the endpoints every upload goes to.

An APIRoute solves its dependencies and opens two exit stacks on every request, and through
`include_router` it is matched again inside the router it came from: about a tenth of the
CPU a 5 s upload costs the proxy (`scripts/overhead.py --capacity`). These endpoints take
the bare request and read their form by hand, so none of that buys them anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope


class PlainRoute(Route):
    """A Starlette route that names itself on the scope as FastAPI's do, so that the metrics
    and the access log label its requests with its path template."""

    def __init__(self, path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
        super().__init__(path, endpoint, methods=["POST"])

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match != Match.NONE:
            child_scope["route"] = self
        return match, child_scope
