"""The follower of Home Assistant's names (`entrypoints.wyoming.hass`), in this process, against the
stand-in of Home Assistant's websocket API: what it reads, and how it rides out a Home
Assistant that restarts or changes many things at once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable

import pytest
from pydantic import SecretStr

from qwen3_asr_server.entrypoints.wyoming.hass import HomeAssistant, websocket_url
from qwen3_asr_server.entrypoints.wyoming.home import Tier
from tests.fixtures.home_assistant import PLACES, TOKEN, HomeAssistantStandIn

WAIT = 30.0


class Names:
    """What the follower handed over, each reading's names."""

    def __init__(self) -> None:
        self.readings: list[list[str]] = []

    def __call__(self, tiers: tuple[Tier, ...]) -> None:
        self.readings.append([name for tier in tiers for group in tier for name in group])

    async def until(self, wanted: Callable[[list[str]], bool]) -> list[str]:
        deadline = time.monotonic() + WAIT
        while not (self.readings and wanted(self.readings[-1])):
            assert time.monotonic() < deadline, f"the names stayed {self.readings[-1:]}"
            await asyncio.sleep(0.05)
        return self.readings[-1]


@pytest.fixture
async def follow() -> AsyncIterator[Callable[[HomeAssistantStandIn], Names]]:
    followers: list[HomeAssistant] = []

    def started(home: HomeAssistantStandIn) -> Names:
        names = Names()
        follower = HomeAssistant(home.url, SecretStr(TOKEN), names)
        follower.start()
        followers.append(follower)
        return names

    yield started
    for follower in followers:
        await follower.stop()


def test_the_websocket_api_is_under_the_url() -> None:
    assert websocket_url("http://homeassistant.local:8123") == (
        "ws://homeassistant.local:8123/api/websocket"
    )
    assert websocket_url("https://ha.example.com/base") == "wss://ha.example.com/base/api/websocket"


async def test_a_user_who_is_not_an_administrator_gets_places_only(
    follow: Callable[[HomeAssistantStandIn], Names], caplog: pytest.LogCaptureFixture
) -> None:
    home = HomeAssistantStandIn(admin=False).start()
    try:
        with caplog.at_level(logging.WARNING):
            names = await follow(home).until(lambda names: True)
    finally:
        home.stop()
    assert names == PLACES
    assert "only an administrator may read it" in caplog.text


async def test_a_restart_keeps_the_names_until_home_assistant_answers_again(
    follow: Callable[[HomeAssistantStandIn], Names],
) -> None:
    home = HomeAssistantStandIn().start()
    port = home.server.port
    names = follow(home)
    await names.until(lambda found: "Reading Lamp" in found)
    home.stop()
    restarted = HomeAssistantStandIn(port=port)
    restarted.states[2]["attributes"]["friendly_name"] = "Sofa Lamp"  # renamed while it was down
    restarted.start()
    try:
        await names.until(lambda found: "Sofa Lamp" in found)
    finally:
        restarted.stop()
    assert all(reading for reading in names.readings)  # never emptied meanwhile


async def test_a_burst_of_changes_is_one_reading(
    follow: Callable[[HomeAssistantStandIn], Names],
) -> None:
    home = HomeAssistantStandIn().start()
    try:
        names = follow(home)
        await names.until(lambda found: "Reading Lamp" in found)
        for count in range(5):
            await asyncio.to_thread(home.rename, "light.lamp", f"Lamp {count}")
        await names.until(lambda found: "Lamp 4" in found)
    finally:
        home.stop()
    assert home.commands.count("get_states") == 2  # at start, and once for the five
    assert len(names.readings) == 2
