"""The main process of `--workers N`: it runs the supervisors, starts the N workers (each
listening on the port, see `serving.port_socket`), starts another in place of any that dies,
and on SIGTERM, SIGINT or SIGHUP tells every worker (which drains, see `capacity.drain`) and waits
for them before it stops vLLM.

A worker is `python -m qwen3_asr_server.serving.worker` with the server's own command line,
so it reads the same settings; like vLLM it runs in a process group of its own (a terminal's
Ctrl-C reaches the main process, which tells each worker) and gets SIGTERM if the main
process dies without cleaning up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from prometheus_client import multiprocess

from ..backend import roles
from ..backend.process_group import die_with_parent
from ..backend.supervisor import Supervisor
from ..capacity.table import Table
from ..entrypoints.wyoming import discovery
from ..observability import tracing
from ..observability.metrics import Metrics
from ..settings.composite import Settings
from . import server as serving
from . import stop_time
from .shared_activity import SharedActivity

logger = logging.getLogger(__name__)

RESPAWN_FIRST = 0.5  # seconds before a dead worker's replacement starts, after one death
RESPAWN_MAX = 30.0  # and at most, however many deaths in a row
STABLE_SECONDS = 60.0  # a worker that lived this long was not dying in a loop: count anew

Process = asyncio.subprocess.Process


def run(
    settings: Settings,
    vllm_args: Sequence[str],
    argv: Sequence[str],
    probe: socket.socket,
    wyoming: socket.socket | None = None,
) -> int:
    """Serve with `settings.workers` worker processes; the server's exit status. A signal
    that stopped it is raised again once all is cleaned up, as uvicorn does.

    `argv` is the server's command line, for the workers. `probe`, bound without
    SO_REUSEPORT, proved the port free (no other server listens there); it gives way to the
    workers' sockets. `wyoming`, the probe of `--wyoming-port`, gives way likewise: each
    worker serves the Wyoming port too, on a socket of its own beside the others'; this
    process alone advertises it (`--wyoming-zeroconf`).
    """
    port = probe.getsockname()[1]  # the one the kernel chose, for --port 0
    probe.close()
    reserved = serving.port_socket(settings.host, port, backlog=None)
    if wyoming is not None:
        wyoming_port = wyoming.getsockname()[1]
        wyoming.close()
        wyoming = serving.port_socket(settings.wyoming_host, wyoming_port, backlog=None)
    with tempfile.TemporaryDirectory(prefix="qwen3-asr-") as name:
        table = Table.create(Path(name), settings.workers)
        command = [*argv, "--port", str(port)]  # the last --port is the one that counts
        manager = Manager(settings, vllm_args, command, Path(name), table)
        try:
            asyncio.run(manager.run())
        finally:
            reserved.close()
            if wyoming is not None:
                wyoming.close()
    if manager.failure is not None:
        print(f"qwen3-asr-server: error: {manager.failure}", file=sys.stderr)
        return 1
    if manager.signal is not None:
        signal.signal(manager.signal, signal.SIG_DFL)
        signal.raise_signal(manager.signal)
    return 0


def respawn_pause(failures: int) -> float:
    """Seconds before a worker that died is started again: 0.5 s after one death, twice as
    long after each more in a row, at most RESPAWN_MAX."""
    return float(min(RESPAWN_FIRST * 2 ** (failures - 1), RESPAWN_MAX))


def ended(code: int) -> str:
    """How a worker's process ended, in words, from its return code."""
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


class Manager:
    def __init__(
        self,
        settings: Settings,
        vllm_args: Sequence[str],
        command: Sequence[str],
        directory: Path,
        table: Table,
    ) -> None:
        self.settings = settings
        self.vllm_args = list(vllm_args)
        self.command = list(command)
        self.directory = directory
        self.table = table
        self.failure: str | None = None  # why the server ends, when it must
        self.signal: int | None = None  # the first signal that told it to stop
        self._workers: list[Process | None] = [None] * settings.workers
        self._done = asyncio.Event()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, *serving.hangup()):  # HUP: as serving.Server
            loop.add_signal_handler(sig, self._on_signal, sig)
        # The supervisors' own metrics stay in this process: the workers show the backend
        # series from the table (`serving.backend_view.BackendCollector`).
        metrics = Metrics()
        traces = tracing.start(self.settings.otlp_traces_endpoint, metrics)  # starts and wakes
        supervisors = [
            Supervisor(
                backend,
                self.settings,
                metrics,
                self._on_fatal,
                self.table.publish,
                SharedActivity(self.table, backend.role, None),
                traces,
            )
            for backend in roles.every(self.settings, self.vllm_args)
        ]
        for supervisor in supervisors:
            self.table.publish(supervisor)  # its URL, before any worker asks
            supervisor.start()
        watches = [asyncio.create_task(self._keep(index)) for index in range(len(self._workers))]
        try:
            async with discovery.advertised(self.settings):  # here: the workers come and go
                await self._done.wait()
        finally:
            await self._stop_workers(watches)
            await asyncio.gather(*(supervisor.stop() for supervisor in supervisors))
            await asyncio.to_thread(traces.shutdown)

    def _on_signal(self, sig: int) -> None:
        """Every signal goes on to the workers: the first starts their drain, a second one
        tells them to stop waiting (uvicorn's own rule)."""
        if self.signal is None:
            self.signal = sig
            logger.info("Stopping: the workers drain, then vLLM stops")
        self._tell(sig)
        self._done.set()

    def _on_fatal(self, message: str) -> None:
        if self.failure is None:
            self.failure = message
        self._done.set()

    def _tell(self, sig: int) -> None:
        for process in self._workers:
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(sig)

    async def _keep(self, index: int) -> None:
        """Run worker `index`, and another each time it dies, until the server stops. One that
        ended by itself before it ever served cannot start (the next would fail alike): that
        ends the server. One that keeps dying (a request that crashes it, sent again and
        again) is started again later each time, so that its restarts cannot take the cores
        vLLM needs."""
        failures = 0  # deaths in a row, each soon after its start
        while not self._done.is_set():
            try:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "qwen3_asr_server.serving.worker",
                    str(index),
                    str(self.directory),
                    *self.command,
                    stdin=asyncio.subprocess.DEVNULL,
                    env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(self.directory)},
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            except OSError as exc:
                self._on_fatal(f"cannot start worker {index}: {exc}")
                return
            self._workers[index] = process
            if self._done.is_set():  # the server began to stop while this one started
                process.send_signal(self.signal or signal.SIGTERM)
            started = time.monotonic()
            code = await process.wait()
            served = self.table.worker(index).pid == process.pid
            self._forget(index, process)
            if self._done.is_set():
                return
            if not served and code >= 0:  # not killed by a signal
                self._on_fatal(f"worker {index} exited with code {code} before it served")
                return
            failures = 1 if time.monotonic() - started >= STABLE_SECONDS else failures + 1
            pause = respawn_pause(failures)
            logger.warning(
                "Worker %d (pid %d) %s; starting another in %g s",
                index,
                process.pid,
                ended(code),
                pause,
            )
            self.table.restarted(index)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(pause):
                    await self._done.wait()

    def _forget(self, index: int, process: Process) -> None:
        """Its slots and its place in line die with it; so do its live gauges."""
        self.table.forget(index)
        multiprocess.mark_process_dead(process.pid, str(self.directory))  # type: ignore[no-untyped-call]
        self._workers[index] = None

    async def _stop_workers(self, watches: list[asyncio.Task[None]]) -> None:
        """SIGTERM to each worker (unless a signal already went), the drain's time to finish
        and exit, then SIGKILL to any left."""
        if self.signal is None:
            self._tell(signal.SIGTERM)
        _, late = await asyncio.wait(watches, timeout=stop_time.worker_seconds(self.settings))
        if late:
            logger.warning("%d workers did not exit in time; killing them", len(late))
            self._tell(signal.SIGKILL)
            await asyncio.wait(late)
