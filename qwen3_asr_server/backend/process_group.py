"""vLLM's process group: it dies with the server, and it is signalled and waited for whole."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

# Looked up once here: the child must not load libraries between fork and exec.
_PRCTL = ctypes.CDLL(None).prctl if sys.platform == "linux" else None
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child (vLLM, a worker), before exec: SIGTERM if this server dies without cleaning up."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. Zombies do not count: where this server is
    PID 1 (a container without an init), the orphans vLLM leaves (its resource tracker) are
    reparented to it and stay zombies, which the group signal still reaches."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
