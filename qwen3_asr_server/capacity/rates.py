"""Requests per minute, per key: a token bucket for each key that has a limit, as OpenAI's own
limits behave (the bucket holds a minute's requests and fills continuously, so a client that
spent it all may send one more request every 60/limit seconds).

One process keeps its buckets in a dictionary (`LocalRates`). The workers of `--workers N`
share theirs (`SharedRates`): a small file mapped into each of them, a slot per key found by a
hash of its name, changed under an flock, which the kernel lets go when its holder dies, so a
key's limit holds across the workers as it does in one process. No I/O but that file.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

SLOTS = 16_384  # keys with a limit the shared file holds (more share slots: stricter, not looser)
_SLOT = struct.Struct("<Qdd")  # the name's hash, the tokens left, when they were counted
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
    """The buckets of every worker, in the file `path` (made if missing: each worker opens it
    alike)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        size = SLOTS * _SLOT.size
        with self._locked():
            if os.fstat(self._fd).st_size < size:
                os.ftruncate(self._fd, size)
        self._map = mmap.mmap(self._fd, size)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def take(self, key: str, limit: int, now: float) -> Verdict:
        mark = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
        mark = mark or 1  # 0 is an empty slot
        with self._locked():
            offset = self._slot(mark)
            found, tokens, at = _SLOT.unpack_from(self._map, offset)
            if found != mark:
                tokens, at = -1.0, now
            verdict, left = spend(tokens, at, limit, now)
            _SLOT.pack_into(self._map, offset, mark, left, now)
        return verdict

    def _slot(self, mark: int) -> int:
        """The slot of `mark`: its own, else the first empty one after its place, else its
        place (two keys then share a bucket)."""
        start = mark % SLOTS
        for step in range(SLOTS):
            offset = ((start + step) % SLOTS) * _SLOT.size
            found = int.from_bytes(self._map[offset : offset + 8], "little")
            if found in (mark, 0):
                return offset
        return start * _SLOT.size

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)
