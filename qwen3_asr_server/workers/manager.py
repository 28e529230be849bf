"""The main process of `--workers N`: it runs the supervisors, starts the N workers on the
listening socket, starts another in place of any that dies, and on SIGTERM or SIGINT tells
every worker (which drains, see `middleware.drain`) and waits for them before it stops vLLM.

The workers are spawned (fresh interpreters, not forks of a process running an event loop)
and get SIGTERM if the main process dies without cleaning up, as vLLM does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from multiprocessing import connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from prometheus_client import multiprocess

from ..backend import roles
from ..backend.supervisor import Supervisor
from ..metrics import Metrics
from ..middleware.drain import ANSWER_GRACE
from ..settings import Settings
from . import worker
from .table import Table

logger = logging.getLogger(__name__)

WATCH = 0.2  # seconds between looks at whether every worker is alive
EXIT_GRACE = 10.0  # seconds past its drain a worker gets to exit before SIGKILL


def run(settings: Settings, vllm_args: Sequence[str], sock: socket.socket) -> int:
    """Serve with `settings.workers` worker processes; the server's exit status. A signal
    that stopped it is raised again once all is cleaned up, as uvicorn does."""
    with tempfile.TemporaryDirectory(prefix="qwen3-asr-") as name:
        directory = Path(name)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = name  # for the workers; set before they start
        table = Table.create(directory, settings.workers)
        manager = Manager(settings, vllm_args, sock, directory, table)
        try:
            code = asyncio.run(manager.run())
        finally:
            sock.close()
    if manager.failure is not None:
        print(f"qwen3-asr-server: error: {manager.failure}", file=sys.stderr)
        return 1
    if manager.signal is not None:
        signal.signal(manager.signal, signal.SIG_DFL)
        signal.raise_signal(manager.signal)
    return code


class Manager:
    def __init__(
        self,
        settings: Settings,
        vllm_args: Sequence[str],
        sock: socket.socket,
        directory: Path,
        table: Table,
    ) -> None:
        self.settings = settings
        self.vllm_args = list(vllm_args)
        self.sock = sock
        self.directory = directory
        self.table = table
        self.failure: str | None = None  # why the server ends, when it must
        self.signal: int | None = None  # the first signal that told it to stop
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[BaseProcess | None] = [None] * settings.workers
        self._done = asyncio.Event()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        # The supervisors' own metrics stay in this process: the workers show the backend
        # series from the table (`workers.view.BackendCollector`).
        metrics = Metrics()
        backends = [roles.asr(self.settings, self.vllm_args), roles.aligner(self.settings)]
        supervisors = [
            Supervisor(backend, self.settings, metrics, self._on_fatal, self.table.publish)
            for backend in backends
            if backend is not None
        ]
        for supervisor in supervisors:
            self.table.publish(supervisor)  # its URL, before any worker asks
            supervisor.start()
        try:
            for index in range(self.settings.workers):
                self._start(index)
            while not self._done.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._done.wait(), WATCH)
                self._replace_dead()
        finally:
            await self._stop_workers()
            await asyncio.gather(*(supervisor.stop() for supervisor in supervisors))
        return 0

    def _on_signal(self, sig: int) -> None:
        """Every signal goes on to the workers: the first starts their drain, a second one
        tells them to stop waiting (uvicorn's own rule)."""
        if self.signal is None:
            self.signal = sig
            logger.info("Stopping: %d workers drain, then vLLM stops", len(self._alive()))
        for process in self._alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid or 0, sig)
        self._done.set()

    def _on_fatal(self, message: str) -> None:
        if self.failure is None:
            self.failure = message
        self._done.set()

    def _start(self, index: int) -> None:
        process = self._context.Process(
            target=worker.run,
            args=(
                self.settings,
                self.vllm_args,
                index,
                str(self.directory),
                self.sock,
                os.getpid(),
            ),
            name=f"qwen3-asr-worker-{index}",
            daemon=True,  # multiprocessing's own exit handler then ends any we missed
        )
        process.start()
        self._workers[index] = process

    def _alive(self) -> list[BaseProcess]:
        return [each for each in self._workers if each is not None and each.is_alive()]

    def _replace_dead(self) -> None:
        """Start a worker in place of each one that died. One that ended by itself before it
        ever served cannot start (the next would fail alike): that ends the server instead."""
        for index, process in enumerate(self._workers):
            if process is None or process.is_alive() or self._done.is_set():
                continue
            served = self.table.worker(index).pid == process.pid
            self._forget(index, process)
            code = process.exitcode
            if not served and code is not None and code >= 0:  # not killed by a signal
                self._on_fatal(f"worker {index} exited with code {code} before it served")
                return
            logger.warning(
                "Worker %d (pid %d) exited with code %s; starting another",
                index,
                process.pid,
                process.exitcode,
            )
            self._start(index)

    def _forget(self, index: int, process: BaseProcess) -> None:
        """Its slots and its place in line die with it; so do its live gauges."""
        self.table.forget(index)
        multiprocess.mark_process_dead(process.pid, str(self.directory))  # type: ignore[no-untyped-call]
        self._workers[index] = None

    async def _stop_workers(self) -> None:
        """SIGTERM to each worker (unless a signal already went), the drain's time to finish
        and exit, then SIGKILL to any left."""
        if self.signal is None:
            for process in self._alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid or 0, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.shutdown_timeout + 2 * ANSWER_GRACE
        deadline += EXIT_GRACE
        while (alive := self._alive()) and (left := deadline - time.monotonic()) > 0:
            sentinels = [process.sentinel for process in alive]
            await asyncio.to_thread(connection.wait, sentinels, left)
        for process in self._alive():
            logger.warning("Worker pid %s did not exit in time; killing it", process.pid)
            process.kill()
        for index, each in enumerate(self._workers):
            if each is not None:
                each.join()
                self._forget(index, each)
