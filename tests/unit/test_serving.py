"""Which listening addresses reach beyond this machine (the warning at start without a key);
what a started server leaves to the garbage collector."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from qwen3_asr_server.capacity.drain import Drain
from qwen3_asr_server.serving.server import Server, beyond_loopback


@pytest.mark.parametrize(
    ("host", "beyond"),
    [
        ("127.0.0.1", False),
        ("127.0.0.2", False),
        ("::1", False),
        ("localhost", False),
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.5", True),
        ("asr.internal", True),  # a name may resolve to anything
    ],
)
def test_loopback_addresses_and_localhost_stay_on_this_machine(host: str, beyond: bool) -> None:
    assert beyond_loopback(host) is beyond


class _Node:
    def __init__(self) -> None:
        self.partner: _Node | None = None


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """The test process's objects given back to the collector after the test."""
    gc.unfreeze()
    yield
    gc.unfreeze()


async def _nothing() -> None:
    return None


async def test_a_started_server_keeps_what_it_built_out_of_full_collections(
    unfrozen: None,
) -> None:
    """Once serving, what the process built to start is frozen (full passes walk only what
    came after), and startup's garbage was collected first, not kept forever."""
    garbage, kept = _Node(), _Node()
    garbage.partner, garbage_ref = garbage, weakref.ref(garbage)  # a cycle: only gc frees it
    del garbage
    app = FastAPI()
    app.state.kept = kept

    @app.get("/")
    def hello() -> str:
        return "hello"

    listener = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(app, lifespan="off", log_level="warning")
    server = Server(config, Drain(_nothing, grace=1.0))
    assert gc.get_freeze_count() == 0
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:  # noqa: ASYNC110 (uvicorn sets a flag, not an event)
            await asyncio.sleep(0.01)
        assert gc.get_freeze_count() > 0
        assert garbage_ref() is None
        assert not any(each is kept for each in gc.get_objects())  # frozen: not walked
        port = listener.getsockname()[1]
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://127.0.0.1:{port}/")).json() == "hello"
    finally:
        server.should_exit = True
        await serving
