"""Starlette routes that name themselves on the scope, as FastAPI's own routes do.

FastAPI's router sets `scope["route"]` for its APIRoutes only, and the metrics and the access
log label a request with that route's path template (`unmatched` without one). These classes
set it for the routes this server declares in plain Starlette: the audio endpoints (which
skip FastAPI's per-request dependency machinery, about a tenth of the CPU a 5 s upload costs
the proxy, `scripts/overhead.py --capacity`) and the playground's page and files.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import Scope


def _named(route: BaseRoute, found: tuple[Match, Scope]) -> tuple[Match, Scope]:
    match, child_scope = found
    if match != Match.NONE:
        child_scope["route"] = route
    return found


class NamedRoute(Route):
    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        return _named(self, super().matches(scope))


class NamedMount(Mount):
    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        return _named(self, super().matches(scope))
