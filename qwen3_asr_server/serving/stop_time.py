"""How long a stop may take, from SIGTERM to exit: the waits the code allows, summed in one
place, so that whatever stops the server (Kubernetes' `terminationGracePeriodSeconds`,
systemd's `TimeoutStopSec`, `podman stop --time`) can be given enough before it kills.

It is the process's stop, so it lives with the process (`serving/`) and reads down: the
drain's grace and the backends' (`backend.supervisor.STOP_GRACE`)."""

from __future__ import annotations

from ..backend.supervisor import STOP_GRACE
from ..capacity.drain import ANSWER_GRACE
from ..settings.composite import Settings

EXIT_GRACE = 10.0  # seconds past its drain a worker gets to exit before SIGKILL


def server_seconds(settings: Settings) -> float:
    """One server process, or one worker: the drain (`--shutdown-timeout`), the 503s sent to
    what still ran at its end, then uvicorn's own graceful timeout for connections still
    open (ANSWER_GRACE each)."""
    return settings.shutdown_timeout + 2 * ANSWER_GRACE


def worker_seconds(settings: Settings) -> float:
    """What the main process of `--workers N` waits for its workers before it kills them."""
    return server_seconds(settings) + EXIT_GRACE


def stop_seconds(settings: Settings) -> float:
    """The whole stop: the server's (its workers', with `--workers N`), then vLLM's own
    (the backends stop at the same time)."""
    serving = worker_seconds(settings) if settings.workers > 1 else server_seconds(settings)
    return serving + STOP_GRACE
