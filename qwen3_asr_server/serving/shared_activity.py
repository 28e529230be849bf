"""A backend's activity (`backend.activity`) across `--workers N`, in the shared table.

Each worker counts its own uses of each backend and when its last one ended; the main
process's sleeper sums them. `enter` and `doze` both hold the table's lock, so a use never
slips in between the sleeper's last look and its decision.
"""

from __future__ import annotations

import time

from ..backend.activity import AWAKE, DOZING
from ..capacity.table import ROLES, Table


class SharedActivity:
    """One backend's activity as one process sees it: worker `index`'s (which enters and
    leaves), or the main process's (index None: it only watches and decides)."""

    def __init__(self, table: Table, role: str, index: int | None) -> None:
        self.table = table
        self._role = ROLES.index(role)
        self._record = table.backend(role)
        self._mine = None if index is None else table.worker(index)
        self._since = time.monotonic_ns()  # no use yet: idle since this process began

    @property
    def state(self) -> int:
        return int(self._record.state)

    def enter(self) -> None:
        assert self._mine is not None, "the main process uses no backend"
        with self.table.locked():
            self._mine.using[self._role] += 1

    def leave(self) -> None:
        assert self._mine is not None, "the main process uses no backend"
        with self.table.locked():
            self._mine.using[self._role] -= 1
            self._mine.used[self._role] = time.monotonic_ns()

    def _idle_ns(self) -> int | None:
        """Call it `locked()`."""
        last = self._since
        for index in range(self.table.workers):
            entry = self.table.worker(index)
            if entry.using[self._role]:
                return None
            last = max(last, entry.used[self._role])
        return time.monotonic_ns() - last

    def idle(self) -> float | None:
        with self.table.locked():
            idle = self._idle_ns()
        return None if idle is None else idle / 1e9

    def doze(self, after: float) -> bool:
        with self.table.locked():
            idle = self._idle_ns()
            if self._record.state != AWAKE or idle is None or idle < after * 1e9:
                return False
            self._record.state = DOZING
            return True

    def wanted(self) -> bool:
        return self.idle() is None

    def settle(self, state: int) -> None:
        """As `LocalActivity.settle`: awake, idle from now."""
        with self.table.locked():
            self._record.state = state
            if state == AWAKE:
                self._since = time.monotonic_ns()
