"""Biasing Wyoming commands: `--wyoming-prompt`, `--wyoming-keywords` and Home Assistant's
names (`--hass-url`) in the context that reaches vLLM. `server.py` runs as a process, in front
of the stand-in vLLM (which records each request) and the stand-in of Home Assistant's
websocket API; commands are sent with the `wyoming` library's client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from wyoming.asr import Transcript

from qwen3_asr_server.backend.launch import free_port
from tests.fixtures.harness import MODEL
from tests.fixtures.home_assistant import TOKEN, HomeAssistantStandIn
from tests.fixtures.process import ServerProcess
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.fixtures.wyoming import Wyoming, answer, send_command, tone

HOME = (
    "Coffee Maker, Espresso Machine, Kitchen Ceiling, Reading Lamp, "  # exposed to Assist
    "Ground Floor, Kitchen, Living Room, Lounge, "  # the areas and floors they are in
    "Bedroom, First Floor, Garage"  # the others
)
WAIT = 30.0  # seconds for names to arrive or change


class Biased(Wyoming):
    def __init__(self, server: ServerProcess, port: int, vllm: StandIn) -> None:
        super().__init__(server, port)
        self.vllm = vllm

    async def context(self) -> str | None:
        """The system turn the next command reaches vLLM with (None: there was none)."""
        async with self.client() as client:
            await send_command(client, tone(0.5))
            events = await answer(client)
        assert Transcript.from_event(events[-1]).text == "Hello world."
        first = self.vllm.requests[-1]["messages"][0]
        return str(first["content"]) if first["role"] == "system" else None

    async def context_when(self, wanted: Callable[[str | None], bool]) -> str | None:
        """The context of commands sent until one has the context wanted."""
        deadline = time.monotonic() + WAIT
        while not wanted(found := await self.context()):
            assert time.monotonic() < deadline, f"the context stayed {found!r}"
            await asyncio.sleep(0.2)
        return found


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Biased]]:
    """Start `server.py` with these flags and environment, in front of the stand-in vLLM."""
    vllm = StandIn(MODEL)
    backend = ThreadedServer(vllm.app).start()
    servers: list[ServerProcess] = []

    def started(*args: str, env: dict[str, str] | None = None) -> Biased:
        port = free_port()
        flags = ["--backend-url", backend.url, "--model", MODEL, "--wyoming-port", str(port), *args]
        server = ServerProcess(tmp_path, flags, env)
        servers.append(server)
        server.wait_for_health(200)
        return Biased(server, port, vllm)

    yield started
    for server in servers:
        server.stop()
    backend.stop()


async def test_prompt_and_keywords_go_into_every_command(
    start: Callable[..., Biased],
) -> None:
    wyoming = start("--wyoming-prompt", "A smart home.", "--wyoming-keywords", "Ecobee, Nanit")
    assert await wyoming.context() == "A smart home.\nEcobee, Nanit"
    assert await wyoming.context() == "A smart home.\nEcobee, Nanit"


async def test_without_them_there_is_no_system_turn(start: Callable[..., Biased]) -> None:
    assert await start().context() is None


async def test_home_assistant_names_reach_vllm_and_follow_a_rename(
    start: Callable[..., Biased],
) -> None:
    home = HomeAssistantStandIn().start()
    try:
        wyoming = start(
            "--wyoming-prompt",
            "A smart home.",
            "--wyoming-keywords",
            "Ecobee,kitchen",  # a name already given is not repeated
            "--hass-url",
            home.url,
            "--log-level",
            "debug",
            env={"QWEN3_ASR_HASS_TOKEN": TOKEN},
        )
        found = await wyoming.context_when(lambda context: "Coffee Maker" in (context or ""))
        assert found == f"A smart home.\nEcobee, kitchen, {HOME.replace('Kitchen, ', '')}"
        assert await wyoming.context() == found  # the same every command: vLLM caches it
        assert "Bedroom Humidity" not in found  # not exposed to Assist

        home.rename("light.lamp", "Sofa Lamp")
        renamed = await wyoming.context_when(lambda context: "Sofa Lamp" in (context or ""))
        assert "Reading Lamp" not in (renamed or "")
        assert "Kitchen Ceiling, Sofa Lamp, Ground Floor" in (renamed or "")
    finally:
        home.stop()
    output = wyoming.server.output()
    assert "Home Assistant: 10 names in the context of Wyoming commands" in output
    assert TOKEN not in output  # not even in debug logs


async def test_a_refused_token_is_logged_once_and_commands_go_on(
    start: Callable[..., Biased],
) -> None:
    home = HomeAssistantStandIn().start()
    try:
        wyoming = start(
            "--wyoming-keywords",
            "Ecobee",
            "--hass-url",
            home.url,
            env={"QWEN3_ASR_HASS_TOKEN": "not-the-token"},
        )
        deadline = time.monotonic() + WAIT
        while "Home Assistant refused --hass-token" not in wyoming.server.output():
            assert time.monotonic() < deadline, wyoming.server.output()
            await asyncio.sleep(0.1)
        assert await wyoming.context() == "Ecobee"
        await asyncio.sleep(2.5)  # past the first retry's delay: there is none
        assert home.auth_attempts == 1  # failed logins can get an address banned
    finally:
        home.stop()
    output = wyoming.server.output()
    assert output.count("Home Assistant refused --hass-token") == 1
    assert "not-the-token" not in output


async def test_home_assistant_down_at_start_then_up(start: Callable[..., Biased]) -> None:
    home = HomeAssistantStandIn()  # its port chosen, nothing listening yet
    wyoming = start("--hass-url", home.url, env={"QWEN3_ASR_HASS_TOKEN": TOKEN})
    try:
        assert await wyoming.context() is None  # a command goes on without names
        home.start()
        assert await wyoming.context_when(lambda context: context == HOME) == HOME
        output = wyoming.server.output()
    finally:
        home.stop()
    assert output.count("cannot be read") == 1  # said once, however many retries
    assert "answers again" in output
