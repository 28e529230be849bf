"""CPU-bound work of a request (decoding, planning the cuts) in a thread that stops with it.

A Python thread cannot be killed, so the work is told: it asks its `Stop` between steps (a
packet decoded, a Silero window judged) and gives up with `Stopped` once the request that
wanted it is gone. `run` keeps the request's slot among `--decode-workers` until its thread
has really ended, so the setting bounds the threads at work, not only the requests waiting on
them; and a spooled upload is never closed under a decoder still reading it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """The request that wanted this work is gone: nobody will read its result."""


class Stop:
    """Whether a job should give up, set from the event loop, asked from its thread."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def check(self) -> None:
        """Raise `Stopped` once the job was told to stop."""
        if self._event.is_set():
            raise Stopped


async def run(slots: asyncio.Semaphore, job: Callable[[Stop], T]) -> T:
    """`job(stop)` in a thread, once one of `slots` is free. Cancelled, it tells the job to stop
    and waits for its thread, holding the slot, before the cancellation goes on."""
    async with slots:
        stop = Stop()
        thread = asyncio.ensure_future(asyncio.to_thread(job, stop))
        try:
            return await asyncio.shield(thread)
        except asyncio.CancelledError:
            stop.set()
            while not thread.done():  # cancelled again meanwhile: still to be waited for
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.shield(thread)
            raise
