"""Who used how many seconds of audio: the key and project that work is done for, and each
process's tally of it by the minute until the jobs' store keeps it
(`entrypoints.jobs.service`), where `GET /v1/organization/usage/audio_transcriptions` reads it.

`CALLER` says whose work is in hand. It is set where work comes in (the keys' middleware for
a request or a WebSocket, a batch line's runner, a Wyoming connection), and the tasks a request
starts (a stream, a Realtime session, a WebRTC call) inherit it, so that every audio path is
counted where every one ends: `Metrics.transcribed`. Work with no caller (a server with no
keys) is not tallied.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass

MINUTE = 60
WYOMING = "wyoming"  # the project Wyoming's work is counted under: it has no key


@dataclass(frozen=True)
class Caller:
    """Whose work: a key's name (None for Wyoming's) and its project's."""

    key: str | None
    project: str


CALLER: ContextVar[Caller | None] = ContextVar("usage_caller", default=None)

# (the minute it began, in seconds since the epoch; the key; the project): seconds, requests
Minutes = dict[tuple[int, str | None, str], tuple[float, int]]


class Tally:
    """One process's usage not yet kept."""

    def __init__(self) -> None:
        self._minutes: Minutes = {}

    def add(self, seconds: float, caller: Caller | None, now: float | None = None) -> None:
        """One finished transcription of `seconds` of audio, for `caller` (none: not counted)."""
        if caller is None:
            return
        at = int(time.time() if now is None else now)
        slot = (at - at % MINUTE, caller.key, caller.project)
        before, requests = self._minutes.get(slot, (0.0, 0))
        self._minutes[slot] = (before + seconds, requests + 1)

    def drain(self) -> Minutes:
        """What was tallied since the last drain, handed over (and forgotten here)."""
        taken, self._minutes = self._minutes, {}
        return taken

    def restore(self, minutes: Minutes) -> None:
        """Usage that could not be kept, added back to be kept later."""
        for slot, (seconds, requests) in minutes.items():
            before, count = self._minutes.get(slot, (0.0, 0))
            self._minutes[slot] = (before + seconds, count + requests)
