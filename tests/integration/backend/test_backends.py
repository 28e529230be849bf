"""The supervisor of any backend: what it does when it cannot do its job."""

from __future__ import annotations

import asyncio

from qwen3_asr_server.backend.launch import Launch
from qwen3_asr_server.backend.roles import ALIGNER, Backend
from qwen3_asr_server.backend.supervisor import Supervisor, status
from qwen3_asr_server.observability.metrics import Metrics
from qwen3_asr_server.settings.composite import Settings


async def test_a_supervisor_that_fails_unexpectedly_ends_the_server() -> None:
    def broken(port: int) -> Launch:
        raise RuntimeError("no such thing")

    fatal: list[str] = []
    backend = Backend(role=ALIGNER, model="m", url=None, command=broken)
    supervisor = Supervisor(backend, Settings(), Metrics(), on_fatal=fatal.append)
    supervisor.start()
    for _ in range(100):
        if fatal:
            break
        await asyncio.sleep(0.01)
    await supervisor.stop()
    assert fatal == ["vLLM (aligner)'s supervisor failed: RuntimeError('no such thing')"]
    assert status(supervisor) == "loading"
