"""`--idle-sleep`: a backend's vLLM sleeps when nobody uses it, and wakes for the next use.

Two ways to sleep, chosen once the backend first serves:
- vLLM's sleep mode (`POST /sleep?level=N`, `POST /wake_up`), where it answers
  `GET /is_sleeping`: a launched vLLM on a GPU gets `--enable-sleep-mode` and the server
  development mode that exposes the endpoints (`launch.build`). Level 1 moves the weights to
  CPU memory and drops the KV cache; level 2 drops the weights too, which waking reloads
  (`collective_rpc reload_weights` between waking the weights' memory and the KV cache's).
- Stopping the launched vLLM and starting it again (vLLM's CPU build, an older vLLM, one
  without the endpoints): the supervisor parks its process loop meanwhile.
A backend given by URL that offers no sleep endpoints cannot be put to sleep: the server ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

import aiohttp

from ..errors import FatalBackendError
from ..observability.tracing import Attributes, Tracing
from ..settings.engine import EngineSettings
from .activity import ASLEEP, AWAKE, WAKING, Activity
from .client import PROBE_TIMEOUT, Client
from .roles import Backend

logger = logging.getLogger(__name__)

LOOK = 0.05  # seconds between the sleeper's looks at the backend's activity
RETRY = 2.0  # seconds before a failed sleep or wake is tried again


class Sleepy(Protocol):
    """What the sleeper needs of a backend's supervisor (`supervisor.Supervisor`)."""

    settings: EngineSettings
    backend: Backend
    url: str
    name: str  # in logs
    device: str
    ready: bool
    activity: Activity
    tracing: Tracing

    async def serving(self) -> None: ...  # until vLLM is ready
    async def unload(self) -> None: ...  # stop it to sleep
    async def reload(self) -> None: ...  # start it again, and wait until it is ready
    def count_sleep(self) -> None: ...
    def count_wake(self, seconds: float) -> None: ...


class Sleeper:
    """Puts one supervised backend to sleep when it has been idle `--idle-sleep` seconds."""

    def __init__(self, supervisor: Sleepy, on_fatal: Callable[[str], None]) -> None:
        self.supervisor = supervisor
        self.on_fatal = on_fatal
        settings = supervisor.settings
        assert settings.idle_sleep is not None
        self.after = settings.idle_sleep
        self.level = settings.idle_sleep_level
        self.mode = False  # vLLM's sleep mode (True) or a stop and a start (False)
        # sleeping and waking wait as long as a start may (level 2 reloads the weights)
        self._client = Client(supervisor.url, supervisor.backend.headers, settings.startup_timeout)

    async def run(self) -> None:
        await self.supervisor.serving()
        try:
            self.mode = await self._offers_sleep_mode()
        except FatalBackendError as exc:
            self.on_fatal(str(exc))
            return
        activity = self.supervisor.activity
        while True:
            await asyncio.sleep(LOOK)
            if activity.state == AWAKE and self.supervisor.ready and activity.doze(self.after):
                await self._fall_asleep()
            elif activity.state == ASLEEP and activity.wanted():
                await self._wake()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _offers_sleep_mode(self) -> bool:
        """Whether the backend answers vLLM's `GET /is_sleeping`; a backend given by URL that
        does not cannot sleep at all (FatalBackendError)."""
        supervisor = self.supervisor
        offered = False
        if supervisor.device != "cpu":  # vLLM's CPU build has no sleep mode
            with contextlib.suppress(TimeoutError, aiohttp.ClientError):
                url = self._client.url("/is_sleeping")
                async with self._client.session.get(url, timeout=PROBE_TIMEOUT) as answer:
                    offered = answer.status == 200
        if not offered and supervisor.backend.command is None:
            raise FatalBackendError(
                f"--idle-sleep: {supervisor.name} at {supervisor.url} offers no sleep "
                "endpoints (GET /is_sleeping); start it with --enable-sleep-mode and "
                "VLLM_SERVER_DEV_MODE=1, or leave out --idle-sleep"
            )
        how = f"vLLM's sleep mode, level {self.level}" if offered else "stopping it"
        logger.info(
            "--idle-sleep: %s sleeps after %g s idle, by %s", supervisor.name, self.after, how
        )
        return offered

    async def _fall_asleep(self) -> None:
        supervisor, activity = self.supervisor, self.supervisor.activity
        try:
            if self.mode:
                await self._post(f"/sleep?level={self.level}")
            else:
                await supervisor.unload()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            logger.warning("%s could not be put to sleep (%r); stays awake", supervisor.name, exc)
            activity.settle(AWAKE)
            await asyncio.sleep(RETRY)
            return
        activity.settle(ASLEEP)
        supervisor.count_sleep()
        logger.info(
            "%s idle for %g s: %s; the next request wakes it",
            supervisor.name,
            self.after,
            f"asleep (level {self.level})" if self.mode else "stopped",
        )

    async def _wake(self) -> None:
        supervisor, activity = self.supervisor, self.supervisor.activity
        activity.settle(WAKING)
        began = time.monotonic()
        how: Attributes = {
            "qwen3_asr.backend": supervisor.backend.role,
            "qwen3_asr.sleep_mode": self.mode,
        }
        try:
            # a span of its own: a restart's start (and vLLM's loading) goes under it
            with supervisor.tracing.span(f"wake {supervisor.name}", "internal", how):
                await self._woken()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            logger.warning("%s did not wake (%r); trying again", supervisor.name, exc)
            activity.settle(ASLEEP)
            await asyncio.sleep(RETRY)
            return
        took = time.monotonic() - began
        activity.settle(AWAKE)
        supervisor.count_wake(took)
        logger.info("%s woke in %.2f s", supervisor.name, took)

    async def _woken(self) -> None:
        if not self.mode:
            await self.supervisor.reload()
        elif self.level == 1:
            await self._post("/wake_up")
        else:
            await self._post("/wake_up?tags=weights")
            await self._post("/collective_rpc", b'{"method": "reload_weights"}')
            await self._post("/wake_up?tags=kv_cache")

    async def _post(self, path: str, body: bytes = b"") -> None:
        headers = {"Content-Type": "application/json"} if body else None
        async with await self._client.post(path, body, headers) as answer:
            if answer.status >= 400:
                text = (await answer.read())[:300].decode(errors="replace")
                raise aiohttp.ClientResponseError(
                    answer.request_info, (), status=answer.status, message=text
                )
