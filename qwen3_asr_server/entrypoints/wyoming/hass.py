"""Home Assistant's names, read over its websocket API (`--hass-url`, `--hass-token`) and
followed while the Wyoming port is served.

One connection to `<url>/api/websocket`: Home Assistant says `auth_required`, the server
answers `{"type": "auth", "access_token": ...}`, and gets `auth_ok` (or `auth_invalid`).
It subscribes to `entity_registry_updated`, `device_registry_updated`,
`area_registry_updated` and `floor_registry_updated` (a rename, an alias, an entity exposed to
Assist or not, an area moved), then reads the registries (`home`) and hands their names to
`on_names`. Each change is read again once the events have been quiet for `QUIET` seconds
(a batch of changes, as at Home Assistant's start, is one reading).

Home Assistant may be down, restarting or slow: the reading is retried with a growing delay,
and commands go on meanwhile with the last names (or none). The first failure is logged as a
warning, the next ones as debug, until a reading succeeds again. A token refused
(`auth_invalid`) is logged as an error and not tried again: Home Assistant counts failed logins
and may ban the address that makes them. The token is never logged (websockets' own
debug lines, which show each frame, are left out for this connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import SecretStr
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from ...observability.log_redaction import websocket_logger
from .home import Home, Tier, exposed_to_assist

logger = logging.getLogger(__name__)

EVENTS = (
    "entity_registry_updated",
    "device_registry_updated",
    "area_registry_updated",
    "floor_registry_updated",
)
QUIET = 1.0  # seconds without a registry event before the names are read again
MOST_QUIET = 10.0  # a home that never stops changing is read again at least this often
FIRST_RETRY = 1.0  # seconds before the first retry; doubled each time, up to LAST_RETRY
LAST_RETRY = 60.0
TIMEOUT = 30.0  # seconds to connect, or for one answer
MAX_MESSAGE = 64 << 20  # `get_states` of a large home is several MB


class HassError(Exception):
    """Home Assistant answered something else than the server asked for."""


class Refused(HassError):
    """Home Assistant refused the token."""


class Failed(HassError):
    """A command answered with an error: its `code` and message."""

    def __init__(self, command: str, error: Any) -> None:
        self.code = error.get("code") if isinstance(error, dict) else None
        super().__init__(f"{command} failed: {error}")


class Session:
    """One authenticated connection: commands, each answered by its `id`; events noted."""

    def __init__(self, websocket: ClientConnection) -> None:
        self.websocket = websocket
        self.last_id = 0
        self.changed = False  # a registry event came since the names were last read

    async def authenticate(self, token: SecretStr) -> None:
        async with asyncio.timeout(TIMEOUT):
            hello = await self._receive()
            if hello.get("type") != "auth_required":
                raise HassError(f"expected auth_required, got {hello.get('type')!r}")
            await self._send({"type": "auth", "access_token": token.get_secret_value()})
            answer = await self._receive()
        if answer.get("type") == "auth_invalid":
            raise Refused(str(answer.get("message") or "auth_invalid"))
        if answer.get("type") != "auth_ok":
            raise HassError(f"expected auth_ok, got {answer.get('type')!r}")

    async def call(self, command: str, **fields: Any) -> Any:
        """The result of one command; Failed when Home Assistant answers with an error."""
        self.last_id += 1
        asked = self.last_id
        async with asyncio.timeout(TIMEOUT):
            await self._send({"id": asked, "type": command, **fields})
            while True:
                message = await self._receive()
                if message.get("id") == asked and message.get("type") == "result":
                    break
        if not message.get("success"):
            raise Failed(command, message.get("error"))
        return message.get("result")

    async def wait_for_change(self) -> None:
        """Return once a registry changed and the events have then been quiet for QUIET
        seconds (or MOST_QUIET have passed)."""
        while not self.changed:
            await self._receive()
        until = time.monotonic() + MOST_QUIET
        with contextlib.suppress(TimeoutError):
            while (left := until - time.monotonic()) > 0:
                async with asyncio.timeout(min(QUIET, left)):
                    await self._receive()
        self.changed = False

    async def _send(self, message: dict[str, Any]) -> None:
        await self.websocket.send(orjson.dumps(message).decode())

    async def _receive(self) -> dict[str, Any]:
        """The next message (its JSON object); an event is noted as a change."""
        message = orjson.loads(await self.websocket.recv())
        if not isinstance(message, dict):
            raise HassError("a message that is not a JSON object")
        if message.get("type") == "event":
            self.changed = True
        return message


async def read_home(session: Session) -> Home:
    """The registries, as `home` reads them."""
    try:
        listed = await session.call("homeassistant/expose_entity/list")
        found = listed.get("exposed_entities") if isinstance(listed, dict) else None
        exposed = found if isinstance(found, dict) else {}
    except Failed as exc:
        if exc.code != "unauthorized":
            raise
        exposed = None  # only an administrator may read it
    states = await session.call("get_states")
    entries = {}
    ids = exposed_to_assist(exposed)
    if ids:  # aliases are in the registry's full entries, read only for these
        entries = await session.call("config/entity_registry/get_entries", entity_ids=ids)
    return Home(
        exposed=exposed,
        states=_list(states),
        entries=entries if isinstance(entries, dict) else {},
        devices=_list(await session.call("config/device_registry/list")),
        areas=_list(await session.call("config/area_registry/list")),
        floors=_list(await session.call("config/floor_registry/list")),
    )


def websocket_url(url: str) -> str:
    """The websocket API of Home Assistant at `url` (http:// or https://)."""
    return "ws" + url.removeprefix("http") + "/api/websocket"


class HomeAssistant:
    """Follows Home Assistant's names for as long as it is started: each reading goes to
    `on_names`, as the tiers of `home`."""

    def __init__(
        self, url: str, token: SecretStr, on_names: Callable[[tuple[Tier, ...]], None]
    ) -> None:
        self.url = websocket_url(url)
        self.token = token
        self.on_names = on_names
        self._task: asyncio.Task[None] | None = None
        self._failing = False  # a failure was logged; the next ones are debug
        self._delay = FIRST_RETRY  # before the next try, after a failure
        self._admin = True  # until Home Assistant says the token's user is not one

    def start(self) -> None:
        self._task = asyncio.create_task(self._follow(), name="home-assistant")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _follow(self) -> None:
        while True:
            try:
                await self._connection()
            except Refused as exc:
                logger.error(
                    "Home Assistant refused --hass-token (%s): Wyoming commands go on without "
                    "its names; not trying again until the server restarts",
                    exc,
                )
                return
            except (OSError, TimeoutError, WebSocketException, HassError, ValueError) as exc:
                self._failed(exc)
            await asyncio.sleep(self._delay)
            self._delay = min(self._delay * 2, LAST_RETRY)

    async def _connection(self) -> None:
        """Read the names at once, then again after each change, until the connection
        fails."""
        async with connect(
            self.url,
            open_timeout=TIMEOUT,
            max_size=MAX_MESSAGE,
            logger=websocket_logger(),  # its debug lines would show the token
        ) as websocket:
            session = Session(websocket)
            await session.authenticate(self.token)
            for event in EVENTS:
                await session.call("subscribe_events", event_type=event)
            while True:
                self._read(await read_home(session))
                await session.wait_for_change()

    def _read(self, home: Home) -> None:
        self._delay = FIRST_RETRY
        if self._failing:
            logger.info("Home Assistant at %s answers again", self.url)
            self._failing = False
        if home.exposed is None and self._admin:
            self._admin = False
            logger.warning(
                "Home Assistant does not tell --hass-token's user which entities are exposed "
                "to Assist (only an administrator may read it): areas and floors only"
            )
        self.on_names(home.tiers())

    def _failed(self, exc: BaseException) -> None:
        level = logging.DEBUG if self._failing else logging.WARNING
        self._failing = True
        logger.log(
            level,
            "Home Assistant at %s cannot be read (%s): Wyoming commands go on with the names "
            "they had; trying again in %.0f s",
            self.url,
            str(exc) or type(exc).__name__,
            self._delay,
        )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
