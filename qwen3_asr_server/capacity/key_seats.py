"""A key's live sessions at once: `max_sessions` in the keys file, its Realtime sessions and
WebRTC calls together, so that one app cannot take every seat of the server
(`--max-sessions`) from the others. A session's lease takes its key's seat before the server's
(`capacity.lease`): a key at its cap is refused with a 429 that names it (counted in
`qwen3_asr_rejected_total{reason="key_session_limit"}`), and holds no seat of the server's
meanwhile.

One process counts in a dictionary (`LocalKeySeats`). The workers of `--workers N` share a slot
per key in a file each of them maps (`capacity.slot_file`), holding each worker's count. A
worker starting empties its own counts, so the sessions of a worker that died are not counted
for ever.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import APIError
from ..observability.metrics import Metrics
from .seats import Seats, refused
from .slot_file import MARK_BYTES, SlotFile
from .table import MAX_WORKERS

SLOTS = 1024  # keys with a cap the shared file holds (more share slots: stricter, not looser)
_COUNTS = struct.Struct(f"<{MAX_WORKERS}i")  # each worker's
FILE_NAME = "key_seats"
REASON = "key_session_limit"  # of `qwen3_asr_rejected_total`


def at_cap(key: str, limit: int, metrics: Metrics) -> APIError:
    message = f"The key {key!r} has {limit} Realtime sessions open, as many as its max_sessions "
    return refused(message + "allows; close one, or retry after a moment.", REASON, metrics)


class Counts(Protocol):
    def take(self, key: str, limit: int) -> bool:
        """One session more for `key`, unless it has `limit` open already (False)."""
        ...

    def leave(self, key: str) -> None: ...


@dataclass(frozen=True)
class KeySeat:
    """A key's seat, as a lease takes seats (`capacity.seats.Seats`)."""

    counts: Counts
    key: str
    limit: int
    metrics: Metrics

    def take(self) -> None:
        if not self.counts.take(self.key, self.limit):
            raise at_cap(self.key, self.limit, self.metrics)

    def leave(self) -> None:
        self.counts.leave(self.key)


def seat(counts: Counts, key: str | None, limit: int | None, metrics: Metrics) -> Seats | None:
    """The seat a session of `key` takes; None when the key has no cap (or there is no key)."""
    if key is None or limit is None:
        return None
    return KeySeat(counts, key, limit, metrics)


class LocalKeySeats:
    """The counts of one process."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def take(self, key: str, limit: int) -> bool:
        if self._open.get(key, 0) >= limit:
            return False
        self._open[key] = self._open.get(key, 0) + 1
        return True

    def leave(self, key: str) -> None:
        left = self._open.pop(key, 1) - 1
        if left > 0:
            self._open[key] = left


class SharedKeySeats:
    """Worker `index`'s view of every worker's counts, in the file `path`
    (`capacity.slot_file`)."""

    def __init__(self, path: Path, index: int) -> None:
        self.index = index
        self._file = SlotFile(path, SLOTS, MARK_BYTES + _COUNTS.size)
        with self._file.locked():
            for slot in range(SLOTS):  # a worker new in its place: none of its sessions live
                self._set(slot * self._file.slot_bytes, 0)

    def take(self, key: str, limit: int) -> bool:
        with self._file.locked():
            offset = self._file.find(key)
            if sum(_COUNTS.unpack_from(self._file.map, offset + MARK_BYTES)) >= limit:
                return False
            self._set(offset, self._mine(offset) + 1)
            return True

    def leave(self, key: str) -> None:
        with self._file.locked():
            offset = self._file.find(key)
            self._set(offset, max(0, self._mine(offset) - 1))

    def _mine(self, offset: int) -> int:
        where = offset + MARK_BYTES + 4 * self.index
        return int.from_bytes(self._file.map[where : where + 4], "little", signed=True)

    def _set(self, offset: int, count: int) -> None:
        where = offset + MARK_BYTES + 4 * self.index
        self._file.map[where : where + 4] = count.to_bytes(4, "little", signed=True)

    def close(self) -> None:
        self._file.close()
