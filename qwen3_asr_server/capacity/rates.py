"""Requests per minute, per key: a token bucket for each key that has a limit, as OpenAI's own
limits behave (the bucket holds a minute's requests and fills continuously, so a client that
spent it all may send one more request every 60/limit seconds).

One process keeps its buckets in a dictionary (`LocalRates`). The workers of `--workers N`
share theirs (`SharedRates`): a slot per key in a file each of them maps
(`capacity.slot_file`), so a key's limit holds across the workers as in one process.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .slot_file import MARK_BYTES, SlotFile

SLOTS = 16_384  # keys with a limit the shared file holds (more share slots: stricter, not looser)
_BUCKET = struct.Struct("<dd")  # the tokens left, and when they were counted
FILE_NAME = "rates"


@dataclass(frozen=True)
class Verdict:
    """What a request was told: whether it may go, the limit, the requests left, and the
    seconds until the bucket is full again (`reset`) or until one more request may go
    (`retry_after`, when it may not)."""

    allowed: bool
    limit: int
    remaining: int
    reset: float
    retry_after: float


def spend(tokens: float, at: float, limit: int, now: float) -> tuple[Verdict, float]:
    """A request against a bucket of `limit` holding `tokens` counted at `at` (a new bucket:
    `tokens` < 0): the verdict, and the tokens it leaves at `now`."""
    per_second = limit / 60.0
    held = float(limit) if tokens < 0 else min(float(limit), tokens + (now - at) * per_second)
    allowed = held >= 1.0
    if allowed:
        held -= 1.0
    verdict = Verdict(
        allowed=allowed,
        limit=limit,
        remaining=int(held),
        reset=(limit - held) / per_second,
        retry_after=0.0 if allowed else (1.0 - held) / per_second,
    )
    return verdict, held


def shown(seconds: float) -> str:
    """A duration as OpenAI writes it in `x-ratelimit-reset-requests`: `120ms`, `1.5s`,
    `6m0s`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{round(seconds, 3):g}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest}s"


class Rates(Protocol):
    def take(self, key: str, limit: int, now: float) -> Verdict:
        """One request of `key` against its `limit` per minute, counted if it may go."""
        ...


class LocalRates:
    """The buckets of one process."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str, limit: int, now: float) -> Verdict:
        tokens, at = self._buckets.get(key, (-1.0, now))
        verdict, left = spend(tokens, at, limit, now)
        self._buckets[key] = (left, now)
        return verdict


class SharedRates:
    """The buckets of every worker, in the file `path` (`capacity.slot_file`)."""

    def __init__(self, path: Path) -> None:
        self._file = SlotFile(path, SLOTS, MARK_BYTES + _BUCKET.size)

    def take(self, key: str, limit: int, now: float) -> Verdict:
        with self._file.locked():
            offset = self._file.find(key) + MARK_BYTES
            tokens, at = _BUCKET.unpack_from(self._file.map, offset)
            verdict, left = spend(tokens if at else -1.0, at, limit, now)  # at 0: a new one
            _BUCKET.pack_into(self._file.map, offset, left, now)
        return verdict

    def close(self) -> None:
        self._file.close()
