"""The server-wide budget of decoded audio (`--audio-budget-seconds`).

What a transcription holds in memory is its decoded audio, 32 KiB a second, from decoding until
its answer (or its event stream) ends; admission counts requests to vLLM, not their size, so
without a budget a few dozen long uploads at once could take all the memory, and the OOM killer
vLLM with it. A request reserves its audio before decoding (`estimate`), corrects the
reservation to what it decoded, and gives it back when it ends. One that does not fit waits in
line, in order of arrival, for at most `--queue-timeout`; then a 429 with `Retry-After`.
With `--workers N` the reservations are counted in the shared table (`capacity.shared`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from ..observability.metrics import Metrics
from ..settings.limits import LimitsSettings
from ..speech.audio import RATE
from .admission import busy

# The default budget: a quarter of the memory, at 32 KiB a second of audio (decoded audio is
# held as 16 kHz 16-bit mono, 32,000 bytes a second; what comes with it, in the figures of
# docs/operations/overload.md, stays within the margin the other three quarters leave).
MEMORY_SHARE = 4
BYTES_PER_SECOND = 32 * 1024
# What an upload of unknown length is assumed to be, in bytes a second: 4 kbit/s, lower than
# speech codecs go in practice (AMR-NB's 4.75 kbit/s, Opus's 6), so a guess from the size is
# rarely short of the real length.
LOWEST_BITRATE = 500
POLL = 0.005  # seconds; what audio freed in another worker may stay unused at most
_CGROUP_LIMIT = Path("/sys/fs/cgroup/memory.max")


def memory_bytes() -> int:
    """The memory this process may use: the machine's, or its cgroup's limit when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with contextlib.suppress(OSError, ValueError):
        total = min(total, int(_CGROUP_LIMIT.read_text().strip()))  # "max": no limit
    return total


def budget_seconds(settings: LimitsSettings) -> float:
    """`--audio-budget-seconds`, else a quarter of the memory at 32 KiB per second of audio."""
    return settings.audio_budget_seconds or memory_bytes() / MEMORY_SHARE / BYTES_PER_SECOND


def estimate(file: BinaryIO, size: int, limit: float) -> tuple[float, int]:
    """Seconds of audio an upload of `size` bytes may decode to, at most `limit`, and its
    channels where that is known (a WAV: its size over the byte rate its header gives, and the
    channels it names) or 0 for a guess (anything else, at `LOWEST_BITRATE`, which is low
    enough to hold a few channels too). The file is left rewound."""
    head = file.read(32)
    file.seek(0)
    if len(head) == 32 and head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        (channels,) = struct.unpack_from("<H", head, 22)
        (byte_rate,) = struct.unpack_from("<I", head, 28)
        if byte_rate >= 1000:  # a sane rate (8-bit mono at 1 kHz and up); else PyAV judges
            return size / byte_rate, max(channels, 1)
    return min(size / LOWEST_BITRATE, limit), 0


class Ledger(Protocol):
    """Where reservations are counted: in this process (`LocalLedger`), or in the table the
    workers share (`capacity.shared.SharedLedger`). Counts are in samples."""

    def locked(self) -> contextlib.AbstractContextManager[None]: ...
    def total(self) -> int: ...
    def mine(self) -> int: ...
    def add(self, samples: int) -> None: ...
    def first_in_line(self, since: int) -> bool: ...
    def set_head(self, since: int) -> None: ...


class LocalLedger:
    """One process's count: only its event loop touches it, so no lock is needed."""

    def __init__(self) -> None:
        self._reserved = 0

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        yield

    def total(self) -> int:
        return self._reserved

    def mine(self) -> int:
        return self._reserved

    def add(self, samples: int) -> None:
        self._reserved += samples

    def first_in_line(self, since: int) -> bool:
        return True  # the one line is the budget's own

    def set_head(self, since: int) -> None:
        return None


class Reservation:
    """Audio one request holds; `release` may be called more than once."""

    def __init__(self, budget: AudioBudget, samples: int) -> None:
        self._budget = budget
        self.samples = samples

    def resize(self, samples: int) -> None:
        """Hold `samples` from now on: what was decoded, known only once it was. More than
        was reserved (audio below `LOWEST_BITRATE`) is taken without waiting."""
        self._budget.change(samples - self.samples)
        self.samples = samples

    def release(self) -> None:
        self.resize(0)


class AudioBudget:
    """At most `limit` seconds of audio reserved at once; a request waits for its share for
    `timeout` seconds, behind those that came before it."""

    def __init__(self, ledger: Ledger, limit: float, timeout: float, metrics: Metrics) -> None:
        self.ledger = ledger
        self.limit = limit
        self.timeout = timeout
        self.metrics = metrics
        self._limit = int(limit * RATE)
        self._line = asyncio.Lock()  # asyncio's locks wake their waiters in order
        self._freed = asyncio.Event()

    async def reserve(self, seconds: float) -> Reservation:
        samples = min(math.ceil(seconds * RATE), self._limit)
        if not self._line.locked() and self._take(samples, time.monotonic_ns()):
            return Reservation(self, samples)
        try:
            # asyncio.timeout, not wait_for: see backend.admission.Admission.acquire
            async with asyncio.timeout(self.timeout), self._line:
                await self._turn(samples)
        except TimeoutError:
            self.metrics.rejected.labels(reason="audio_budget").inc()
            raise busy(
                f"no room for {seconds:.0f} s of audio within {self.timeout:.0f} s"
            ) from None
        return Reservation(self, samples)

    async def _turn(self, samples: int) -> None:
        """First in this process's line: wait until the audio fits and no other worker's
        first has waited longer."""
        since = time.monotonic_ns()
        with self.ledger.locked():
            self.ledger.set_head(since)
        try:
            while True:
                self._freed.clear()
                if self._take(samples, since):
                    return
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(POLL):
                        await self._freed.wait()
        finally:
            with self.ledger.locked():
                self.ledger.set_head(0)

    def _take(self, samples: int, since: int) -> bool:
        with self.ledger.locked():
            fits = self.ledger.total() + samples <= self._limit
            if fits and self.ledger.first_in_line(since):
                self.ledger.add(samples)
                self._show()
                return True
        return False

    def change(self, samples: int) -> None:
        with self.ledger.locked():
            self.ledger.add(samples)
        if samples < 0:
            self._freed.set()
        self._show()

    def _show(self) -> None:
        """This worker's share of the gauge; /metrics sums the workers' (livesum)."""
        self.metrics.audio_reserved.set(self.ledger.mine() / RATE)
