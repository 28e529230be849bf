"""The table the main process and its workers share: one small file, mapped into each of them.

It holds what the supervisors know of each backend (written by the main process, read by the
workers) and each worker's admission counts, audio reserved, Realtime sessions and Wyoming
connections (written by that worker, summed by all of them).
Whatever must be read or changed whole is under `locked()`: an flock on the file, which the
kernel lets go when its holder dies, so a worker killed at any moment never wedges the rest.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import mmap
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import orjson

MAX_WORKERS = 64
FILE_NAME = "table"
# a record for each backend the server runs, in this order: `backend.roles`'s ASR and ALIGNER
# (named here, not imported, so that the capacity layer stays below the backend's)
ROLES = ("asr", "aligner")
_INFO_BYTES = 4096  # the backend's URL, launcher, device and model id, as JSON


class _Role(Protocol):
    @property
    def role(self) -> str: ...  # one of ROLES


class Published(Protocol):
    """What the table keeps of a backend, as a supervisor knows it (`backend.supervisor`'s
    `BackendState` has all of it)."""

    @property
    def backend(self) -> _Role: ...
    @property
    def url(self) -> str: ...
    @property
    def flavour(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def upstream_model(self) -> str | None: ...
    @property
    def ready(self) -> bool: ...
    @property
    def ever_ready(self) -> bool: ...
    @property
    def restarts(self) -> int: ...
    @property
    def sleeps(self) -> int: ...
    @property
    def wakes(self) -> int: ...
    @property
    def wake_seconds(self) -> float: ...


class _Backend(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint64),  # +1 with every change of `info`
        ("ready", ctypes.c_uint8),
        ("ever_ready", ctypes.c_uint8),
        ("restarts", ctypes.c_uint32),
        ("info", ctypes.c_char * _INFO_BYTES),
        ("state", ctypes.c_uint8),  # backend.activity's AWAKE, DOZING, ASLEEP or WAKING
        ("sleeps", ctypes.c_uint32),  # --idle-sleep: times it was put to sleep
        ("wakes", ctypes.c_uint32),  # and woken
        ("wake_ns", ctypes.c_uint64),  # the wakes' time together
    ]


class _Worker(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_int32),  # set once the worker serves; 0 before
        ("taken", ctypes.c_int32),  # admission slots it holds
        ("waiting", ctypes.c_int32),  # its requests waiting for one
        ("head", ctypes.c_int64),  # when the first of them began to wait (ns); 0: none waits
        ("sessions", ctypes.c_int32),  # Realtime sessions it has open
        ("restarts", ctypes.c_uint32),  # workers started in its place after one died
        ("audio", ctypes.c_int64),  # samples of decoded audio its requests reserved
        ("audio_head", ctypes.c_int64),  # when its first request waiting for audio began (ns)
        ("wyoming", ctypes.c_int32),  # Wyoming connections it has open
        ("using", ctypes.c_int32 * len(ROLES)),  # uses of each backend (backend.activity)
        ("used", ctypes.c_int64 * len(ROLES)),  # when its last use of each ended (ns)
    ]


class _Layout(ctypes.Structure):
    _fields_ = [
        ("started", ctypes.c_double),  # when the main process made the table (Unix time)
        ("backends", _Backend * len(ROLES)),
        ("workers", _Worker * MAX_WORKERS),
    ]


@contextlib.contextmanager
def exclusive(fd: int) -> Iterator[None]:
    """`fd`'s file held by this process alone (an flock, which the kernel lets go when its
    holder dies, so that a worker killed while it holds it wedges no other)."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


class Table:
    """One process's mapping of the shared table."""

    def __init__(self, path: Path, workers: int) -> None:
        self.path = path
        self.workers = workers
        self._fd = os.open(path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, ctypes.sizeof(_Layout))
        self._layout = _Layout.from_buffer(self._map)

    @classmethod
    def create(cls, directory: Path, workers: int) -> Table:
        """A zeroed table in `directory`, for `workers` workers (the main process's)."""
        if not 1 <= workers <= MAX_WORKERS:
            raise ValueError(f"between 1 and {MAX_WORKERS} workers, not {workers}")
        path = directory / FILE_NAME
        path.write_bytes(bytes(ctypes.sizeof(_Layout)))
        table = cls(path, workers)
        table._layout.started = time.time()
        return table

    @property
    def started(self) -> float:
        return float(self._layout.started)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return exclusive(self._fd)

    def backend(self, role: str) -> _Backend:
        record: _Backend = self._layout.backends[ROLES.index(role)]
        return record

    def worker(self, index: int) -> _Worker:
        entry: _Worker = self._layout.workers[index]
        return entry

    def totals(self) -> tuple[int, int]:
        """Slots taken and requests waiting, over every worker; call it `locked()`."""
        taken = waiting = 0
        for index in range(self.workers):
            entry = self._layout.workers[index]
            taken += entry.taken
            waiting += entry.waiting
        return taken, waiting

    def restarted(self, index: int) -> None:
        with self.locked():
            self.worker(index).restarts += 1

    def restarts(self) -> list[int]:
        """Each worker's count of restarts."""
        return [int(self._layout.workers[index].restarts) for index in range(self.workers)]

    def seats(self, column: str) -> int:
        """Seats of one kind (`capacity.seats.Kind`) taken, over every worker: `sessions`
        (Realtime) or `wyoming` (connections); call it `locked()`."""
        return sum(getattr(self._layout.workers[index], column) for index in range(self.workers))

    def audio(self) -> int:
        """Samples of audio reserved, over every worker; call it `locked()`."""
        return sum(self._layout.workers[index].audio for index in range(self.workers))

    def first_in_line(self, since: int, line: str = "head") -> bool:
        """Whether no worker's first waiter has waited longer than since `since` (ns, the
        system's monotonic clock, which every process shares), in the line whose heads are
        `line` (admission's `head`, the audio budget's `audio_head`); call it `locked()`."""
        for index in range(self.workers):
            head = getattr(self._layout.workers[index], line)
            if head and head < since:
                return False
        return True

    def publish(self, state: Published) -> None:
        """Write what `state` (the main process's supervisor) says, for the workers to read."""
        record = self.backend(state.backend.role)
        info = orjson.dumps(
            {
                "url": state.url,
                "flavour": state.flavour,
                "device": state.device,
                "upstream_model": state.upstream_model,
            }
        )
        with self.locked():
            record.ready = state.ready
            record.ever_ready = state.ever_ready
            record.restarts = state.restarts
            record.sleeps, record.wakes = state.sleeps, state.wakes
            record.wake_ns = int(state.wake_seconds * 1e9)
            record.info = info
            record.version += 1

    def info(self, role: str) -> tuple[int, dict[str, Any]]:
        """A backend's info as last published, with its version."""
        record = self.backend(role)
        with self.locked():
            return record.version, orjson.loads(record.info)

    def forget(self, index: int) -> None:
        """Clear a worker's entry: it died, and its slots and its line died with it (what
        it counted in `restarts` stays)."""
        with self.locked():
            entry = self.worker(index)
            entry.pid = entry.taken = entry.waiting = entry.head = entry.sessions = 0
            entry.audio = entry.audio_head = entry.wyoming = 0
            for role in range(len(ROLES)):
                entry.using[role] = 0
