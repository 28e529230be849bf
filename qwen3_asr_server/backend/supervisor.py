"""Owns one vLLM backend: starts it, knows whether it is ready, restarts it, stops it.

Readiness is what vLLM itself answers on `/health`, polled, plus the exit of its process,
watched. A backend given by URL is not launched; only the polling runs. A backend that
cannot start at all is fatal: `on_fatal` gets one line saying why and the server exits.
The server runs one supervisor per backend (see `roles`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

import aiohttp

from ..errors import FatalBackendError, LaunchError
from ..observability.metrics import Metrics
from ..observability.tracing import OFF, Attributes, Span, Tracing
from ..settings.engine import EngineSettings
from . import launch
from .activity import AWAKE, Activity, LocalActivity
from .client import PROBE_SECONDS, PROBE_TIMEOUT, Client
from .failures import BackendGone
from .process_group import die_with_parent, group_alive, signal_group
from .roles import ASR, Backend
from .sleep import Sleeper

logger = logging.getLogger(__name__)

POLL_LOADING = 0.5  # seconds between health probes while loading
POLL_READY = 2.0  # and once ready
STOP_GRACE = 10.0  # seconds vLLM gets to exit after SIGTERM before SIGKILL
BACKOFF_MAX = 30.0
SERVING = ("ok", "sleeping")  # what `status` says of a backend that serves requests


class BackendState(Protocol):
    """What the rest of the server knows of a backend: where it is and whether it serves.

    A `Supervisor` knows it first hand; with `--workers N` each worker process reads what the
    main process's supervisor knows (`serving.backend_view.BackendView`).
    """

    @property
    def backend(self) -> Backend: ...
    @property
    def url(self) -> str: ...
    @property
    def ready(self) -> bool: ...
    @property
    def ever_ready(self) -> bool: ...
    @property
    def restarts(self) -> int: ...
    @property
    def flavour(self) -> str: ...  # the launcher ("vllm", "vllm-cpu", ...) or "remote"
    @property
    def device(self) -> str: ...
    @property
    def upstream_model(self) -> str | None: ...
    @property
    def activity(self) -> Activity: ...  # its uses, and whether it sleeps (--idle-sleep)
    @property
    def sleeps(self) -> int: ...
    @property
    def wakes(self) -> int: ...
    @property
    def wake_seconds(self) -> float: ...  # the wakes' time together


def status(state: BackendState) -> str:
    """`ok`, `sleeping` (--idle-sleep: ready, but its next request waits for it to wake),
    `loading` (never ready yet) or `down` (was ready, is not now)."""
    if state.activity.state != AWAKE:
        return "sleeping"
    if state.ready:
        return "ok"
    return "down" if state.ever_ready else "loading"


def check_ready(state: BackendState, what: str) -> None:
    """A 503 naming `what` while the backend loads or restarts: nothing to wait for. A
    sleeping backend passes: the request wakes it."""
    if status(state) not in SERVING:
        condition = "still loading" if status(state) == "loading" else "restarting"
        raise BackendGone(f"{what} is {condition}; retry shortly.")


class Supervisor:
    def __init__(
        self,
        backend: Backend,
        settings: EngineSettings,
        metrics: Metrics,
        on_fatal: Callable[[str], None],
        on_change: Callable[[Supervisor], None] = lambda _: None,
        activity: Activity | None = None,
        tracing: Tracing = OFF,
    ) -> None:
        self.backend = backend
        self.settings = settings  # startup_timeout, max_restarts
        self.metrics = metrics
        self.on_fatal = on_fatal
        self.on_change = on_change  # told whenever what `BackendState` says changes
        self.port = launch.free_port() if backend.command else 0
        self.url = backend.url or f"http://127.0.0.1:{self.port}"
        self.flavour = "remote"
        self.device = "remote"
        self.upstream_model = backend.served_name  # the id requests name; see _discover_model
        self.name = "vLLM" if backend.role == ASR else f"vLLM ({backend.role})"  # in logs
        # its output, relayed line by line under the logger "vllm" (or "vllm.aligner")
        self.output_logger = logging.getLogger(
            "vllm" if backend.role == ASR else f"vllm.{backend.role}"
        )
        self.ready = False
        self.ever_ready = False
        self.restarts = 0
        self.activity = activity or LocalActivity()
        self.sleeps = self.wakes = 0
        self.wake_seconds = 0.0
        self.tracing = tracing  # each start a span, vLLM's loading spans under it
        self._woken_by: dict[str, str] = {}  # the wake's trace, for the start it asked for
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._recent_output: deque[str] = deque(maxlen=20)
        self._probe_client = Client(self.url, backend.headers, PROBE_SECONDS, connections=2)
        self._parked: asyncio.Event | None = None  # stopped to sleep: set to start it again
        self._ready = asyncio.Event()
        self.sleeper = Sleeper(self, on_fatal) if settings.idle_sleep else None
        self._sleeping: asyncio.Task[None] | None = None
        metrics.model_ready.labels(backend.role).set(0)  # listed from the start, as 0
        for counter in (metrics.backend_restarts, metrics.backend_sleeps, metrics.backend_wakes):
            counter.labels(backend.role)
        metrics.backend_wake_seconds.labels(backend.role)
        metrics.backend_sleeping.labels(backend.role).set(0)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"{self.backend.role}-supervisor")
        if self.sleeper is not None:
            self._sleeping = asyncio.create_task(self.sleeper.run(), name="sleeper")

    async def stop(self) -> None:
        """Stop watching and stop vLLM's whole process group (SIGTERM, then SIGKILL)."""
        self._stopping = True
        for task in (self._sleeping, self._task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.sleeper is not None:
            await self.sleeper.aclose()
        await self._probe_client.aclose()

    async def unload(self) -> None:
        """Stop the launched vLLM to sleep; its process loop waits for `reload`."""
        self._parked = asyncio.Event()
        self._ready.clear()
        if self._proc is not None:
            await self._terminate(self._proc)

    async def serving(self) -> None:
        """Until vLLM is ready (again, after `unload`)."""
        await self._ready.wait()

    async def reload(self) -> None:
        """Start the vLLM `unload` stopped, and wait until it is ready."""
        if self._parked is not None:
            self._woken_by = {}
            self.tracing.inject(self._woken_by)  # the start goes under the wake's span
            self._parked.set()
        await self.serving()

    def count_sleep(self) -> None:
        self.sleeps += 1
        self.metrics.backend_sleeps.labels(self.backend.role).inc()
        self.metrics.backend_sleeping.labels(self.backend.role).set(1)
        self.on_change(self)

    def count_wake(self, seconds: float) -> None:
        self.wakes += 1
        self.wake_seconds += seconds
        role = self.backend.role
        self.metrics.backend_wakes.labels(role).inc()
        self.metrics.backend_wake_seconds.labels(role).inc(seconds)
        self.metrics.backend_sleeping.labels(role).set(0)
        self.on_change(self)

    async def _run(self) -> None:
        try:
            if self.backend.command is not None:
                await self._supervise(self.backend.command)
            else:
                await self._monitor()
        except FatalBackendError as exc:
            self._set_ready(False)
            if not self._stopping:
                self.on_fatal(str(exc))
        except Exception as exc:  # a bug here must not leave a backend nobody watches
            logger.exception("%s's supervisor failed", self.name)
            self._set_ready(False)
            self.on_fatal(f"{self.name}'s supervisor failed: {exc!r}")
        finally:
            if self._proc is not None:
                await self._terminate(self._proc)

    def _set_ready(self, ready: bool) -> None:
        if ready != self.ready:
            self.ready = ready
            self.ever_ready = self.ever_ready or ready
            if ready:
                self._ready.set()
            self.metrics.model_ready.labels(self.backend.role).set(1 if ready else 0)
            self.on_change(self)

    async def _discover_model(self) -> None:
        """For a backend given by URL: adopt the id it lists when ours is not among its ids
        and it lists only one (or when we have none)."""
        probe = self._probe_client
        try:
            async with probe.session.get(probe.url("/v1/models"), timeout=PROBE_TIMEOUT) as answer:
                listing = await answer.json(content_type=None)
            ids = [str(entry["id"]) for entry in listing["data"]]
        except (TimeoutError, aiohttp.ClientError, ValueError, KeyError, TypeError):
            return
        if self.upstream_model in ids or not ids:
            return
        if self.upstream_model is None or len(ids) == 1:
            self.upstream_model = ids[0]
            self.on_change(self)
            logger.info("%s at %s serves %r; requests go to it", self.name, self.url, ids[0])

    def _set_info(self) -> None:
        role, model = self.backend.role, self.backend.model
        self.metrics.backend_info.labels(backend=role, device=self.device, model_id=model).set(1)
        self.on_change(self)

    async def _monitor(self) -> None:
        self._set_info()
        while True:
            ready = await self._probe_client.healthy()
            if ready and not self.ready:
                await self._discover_model()
                logger.info("%s ready at %s", self.name, self.url)
            elif self.ready and not ready:
                logger.warning("%s at %s stopped answering", self.name, self.url)
            self._set_ready(ready)
            await asyncio.sleep(POLL_READY if ready else POLL_LOADING)

    async def _supervise(self, build: Callable[[int], launch.Launch]) -> None:
        try:
            command = build(self.port)
        except LaunchError as exc:
            raise FatalBackendError(str(exc)) from exc
        self.flavour = command.flavour
        self.device = command.device
        self._set_info()
        if command.device == "cpu" and self.backend.role == ASR:
            logger.warning(
                "CPU mode: vLLM's CPU build runs the model on %d cores, far slower than a GPU "
                "does; it suits development, tests and light use, not a low-latency voice loop",
                len(os.sched_getaffinity(0)),
            )
        failures = 0
        ever_ready = False
        while True:
            proc, loading = await self._spawn(command)
            was_ready, code = await self._watch(proc, loading)
            self._set_ready(False)
            await self._terminate(proc)
            if self._parked is not None:  # stopped to sleep (`unload`): started on waking
                await self._parked.wait()
                self._parked = None
                continue
            reason = f"{self.name} exited with code {code}"
            last = self._last_output_line()
            if not was_ready:
                if not ever_ready:
                    raise FatalBackendError(f"{reason} before it was ready: {last}")
                failures += 1
                if failures > self.settings.max_restarts:
                    raise FatalBackendError(
                        f"{reason}; gave up after {self.settings.max_restarts} restarts: {last}"
                    )
            else:
                failures = 0
            ever_ready = ever_ready or was_ready
            delay = min(BACKOFF_MAX, 2.0**failures)
            logger.warning("%s (%s); restarting it in %.0f s", reason, last, delay)
            await asyncio.sleep(delay)
            self.restarts += 1
            self.metrics.backend_restarts.labels(self.backend.role).inc()
            self.on_change(self)

    async def _spawn(self, command: launch.Launch) -> tuple[asyncio.subprocess.Process, Span]:
        """vLLM started, and the span of its start, which ends when it is ready (or gone)."""
        settings = " ".join(f"{name}={value}" for name, value in command.env.items())
        logger.info(
            "Starting %s: %s", command.flavour, " ".join(filter(None, [settings, *command.argv]))
        )
        self._recent_output.clear()
        woken, self._woken_by = self._woken_by, {}
        role: Attributes = {"qwen3_asr.backend": self.backend.role}
        with self.tracing.span(
            f"start {self.name}", "internal", role, woken, ends=False
        ) as loading:
            traced: dict[str, str] = {}
            self.tracing.inject(traced)  # vLLM reads TRACEPARENT for its loading spans
        env = {**os.environ, **command.env, **{k.upper(): v for k, v in traced.items()}}
        try:
            proc = await asyncio.create_subprocess_exec(
                *command.argv,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # its own process group, so that we can stop all of it
                preexec_fn=die_with_parent,
                limit=1 << 20,
            )
        except OSError as exc:
            loading.end()
            raise FatalBackendError(f"cannot start {command.argv[0]}: {exc}") from exc
        self._proc = proc
        return proc, loading

    async def _relay_output(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:  # a line over the limit: skip it, keep relaying
                continue
            if not raw:
                return
            line = raw.decode(errors="replace").rstrip()
            if line:
                self._recent_output.append(line)
                self.output_logger.info("%s", line)

    def _last_output_line(self) -> str:
        return self._recent_output[-1] if self._recent_output else "no output"

    async def _watch(self, proc: asyncio.subprocess.Process, loading: Span) -> tuple[bool, int]:
        """Follow one vLLM process until it exits; return (became ready, exit code). `loading`,
        its start's span, ends when it is ready or gone."""
        relay = asyncio.create_task(self._relay_output(proc))
        deadline = time.monotonic() + self.settings.startup_timeout
        was_ready = False
        try:
            while proc.returncode is None:
                ready = await self._probe_client.healthy()
                if ready and not was_ready:
                    was_ready = True
                    loading.end()
                    logger.info("%s ready (pid %d, %s)", self.name, proc.pid, self.url)
                elif was_ready and ready != self.ready and self._parked is None:
                    logger.warning("%s %s", self.name, "healthy again" if ready else "unhealthy")
                self._set_ready(ready)
                if not was_ready and time.monotonic() > deadline:
                    raise FatalBackendError(
                        f"{self.name} was not ready after {self.settings.startup_timeout:.0f} s "
                        f"(--startup-timeout): {self._last_output_line()}"
                    )
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(proc.wait(), POLL_READY if was_ready else POLL_LOADING)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(relay, 2.0)  # the last words, often the reason it died
        finally:
            relay.cancel()
            if not was_ready:  # gone, or given up on, while it loaded
                loading.end()
        return was_ready, proc.returncode

    async def _terminate(self, proc: asyncio.subprocess.Process) -> None:
        """Stop the process group led by `proc`: SIGTERM, then SIGKILL after STOP_GRACE."""
        pgid = proc.pid  # start_new_session made it the group leader
        if not group_alive(pgid):
            await proc.wait()
            return
        logger.info("Stopping %s (process group %d)", self.name, pgid)
        signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), 0.1)
            if proc.returncode is not None and not group_alive(pgid):
                return
        logger.warning(
            "%s did not exit within %.0f s of SIGTERM; killing it", self.name, STOP_GRACE
        )
        signal_group(pgid, signal.SIGKILL)
        await proc.wait()
