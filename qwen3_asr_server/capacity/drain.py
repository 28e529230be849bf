"""Graceful shutdown: on SIGTERM finish what was accepted, refuse what is new, drop nothing.

Left to itself uvicorn stops listening at once (a new client gets a refused connection, a
keep-alive one a reset) and, when its grace period is over, cancels whatever still runs: that
client gets a closed connection and no answer. Instead the server first drains: it keeps
listening and answers new requests 503 with `Retry-After` (a load balancer or the SDK's retry
goes elsewhere or comes back; `entrypoints.middleware.drain` refuses them), `/health` turns 503, and
the requests already accepted get up to `--shutdown-timeout` seconds to finish. Those still
running then are ended the way a dying backend ends them (a 503, or an error event in a
stream), and only then does uvicorn shut down. Realtime sessions count as requests: each is
told (`started`) and closes itself once the utterance being spoken is transcribed
(`entrypoints.realtime.routes`).

The count lives with the server's other counts (`capacity`), below every front door, so that
what a live session holds can be taken and given back with its place in the drain;
`serving.server` runs the drain before uvicorn's shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from ..errors import APIError

logger = logging.getLogger(__name__)

ANSWER_GRACE = 5  # seconds the requests ended at the deadline get to send their 503
POLL = 0.1  # seconds between looks at whether the operator insists on stopping now


def shutting_down() -> APIError:
    return APIError(
        503,
        "The server is shutting down; retry shortly (another instance may answer).",
        code="server_shutting_down",
        headers={"Retry-After": "1", "Connection": "close"},
    )


class Drain:
    """Counts the requests being served and, once `run` starts, refuses new ones.

    `abort` ends every request still with the backend, each as if the backend had gone.
    """

    def __init__(self, abort: Callable[[], Awaitable[None]], grace: float) -> None:
        self.abort = abort
        self.grace = grace
        self.draining = False
        self.started = asyncio.Event()  # set with `draining`, for those who wait on it
        self.active = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> None:
        self.active += 1
        self._idle.clear()

    def leave(self) -> None:
        self.active -= 1
        if not self.active:
            self._idle.set()

    async def run(self, forced: Callable[[], bool]) -> None:
        """Drain: wait for the accepted requests, end the rest after the grace period.

        `forced` says the operator insisted (a second signal): stop waiting then.
        """
        self.draining = True
        self.started.set()
        if self.active:
            logger.info(
                "Shutting down: %d requests and sessions in progress get up to %g s to finish "
                "(--shutdown-timeout); new requests get 503",
                self.active,
                self.grace,
            )
        if await self._settled(self.grace, forced):
            return
        logger.warning(
            "Shutting down: %d requests still running after %g s; ending them with 503",
            self.active,
            self.grace,
        )
        await self.abort()
        await self._settled(ANSWER_GRACE, forced)

    async def _settled(self, seconds: float, forced: Callable[[], bool]) -> bool:
        """Wait until no request runs (True), the operator insists (True) or time is up."""
        deadline = time.monotonic() + seconds
        while not forced():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._idle.wait(), min(POLL, left))
                return True
        return True
