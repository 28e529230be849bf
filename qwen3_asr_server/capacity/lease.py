"""What a live session holds while it lives, taken and given back as one: its lease.

A live session (a Realtime WebSocket, a WebRTC call, a Wyoming command or connection) holds
up to five things, each in this order: the speech model's readiness (checked, not held: a
503 while vLLM loads or restarts), its key's seat (`capacity.key_seats`: a 429 past the
key's `max_sessions`), a seat (`capacity.seats`: a 429 past `--max-sessions`),
its use of the engine (`backend.activity`: the engine woken, and kept from sleeping), and
its place in the drain's count (`capacity.drain`: a SIGTERM waits for it). Readiness comes
before the seat, so that a loading server answers 503, not 429. A lease names the ones its
session holds (the others are None): a WebSocket's place in the drain is the middleware's,
held for its request's life; a Wyoming command's readiness is checked per utterance by the
transcription core, its connection's seat by the listener.

`take` takes them in order; when one step fails, those taken before it are given back
before the error goes on. `give_back` gives back what was taken, in the reverse order, and
may be called again: only the first gives anything back, so whatever may end a session can
give its lease back. The lease is a context manager that gives back on exit, an exception or
a cancellation included: `with lease.take(): ...`. Every step is synchronous, so a lease is
taken and given back where an async one could not be: in a protocol factory, in the event
handler that begins or ends a Wyoming command. A WebRTC call's lease is taken by its POST
and given back by the task that serves it, when the call ends.

The steps are small protocols, so that this layer knows nothing of the backend, the server
or the front doors that lease.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from .seats import Seats


class Count(Protocol):
    """Something counted while a session lives: the engine's activity, the drain."""

    def enter(self) -> None: ...
    def leave(self) -> None: ...


class Lease:
    """What one live session holds: `take` it, then `give_back` (or leave its `with`).

    `ready` raises an `APIError` when the session cannot be served now; `seats.take` raises
    one (a 429) when none is free, and so does `own_seat.take`, the seat of the session's
    key (`capacity.key_seats`), taken before the server's."""

    def __init__(
        self,
        *,
        ready: Callable[[], None] | None = None,
        own_seat: Seats | None = None,
        seats: Seats | None = None,
        activity: Count | None = None,
        drain: Count | None = None,
    ) -> None:
        self._steps: list[tuple[Callable[[], None], Callable[[], None]]] = []
        if ready is not None:
            self._steps.append((ready, _nothing))
        for seat in (own_seat, seats):
            if seat is not None:
                self._steps.append((seat.take, seat.leave))
        for count in (activity, drain):
            if count is not None:
                self._steps.append((count.enter, count.leave))
        self._held: list[Callable[[], None]] = []  # what gives back each step taken
        self._taken = False

    def take(self) -> Lease:
        """Take every step, in order; an error of one gives back those before it."""
        if self._taken:
            raise RuntimeError("the lease is taken already")
        try:
            for take, leave in self._steps:
                take()
                self._held.append(leave)
        except BaseException:
            self._release()
            raise
        self._taken = True
        return self

    def give_back(self) -> None:
        """Give back what was taken, the last taken first; again, nothing more."""
        self._taken = False
        self._release()

    def _release(self) -> None:
        while self._held:
            self._held.pop()()

    def __enter__(self) -> Lease:
        if not self._taken:
            raise RuntimeError("`with lease.take()`: a lease is entered once taken")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.give_back()


def _nothing() -> None:
    """Readiness is checked, and holds nothing to give back."""
