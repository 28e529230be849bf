"""A front door's own services, kept on the app's state under the door's name (`app.py`'s
`Doors`), for that slice's routes alone: the way a slice's routes reach what is theirs without
the app's whole state (`state`), which the live doors never import."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import HTTPConnection


def slice_services(name: str) -> Callable[[HTTPConnection], Awaitable[Any]]:
    """A dependency giving one front door's own services, kept as `app.state.<name>`; the
    slice annotates it with their type (`Annotated[Jobs, Depends(slice_services("jobs"))]`)."""

    async def services(connection: HTTPConnection) -> Any:
        return getattr(connection.app.state, name)

    return services
