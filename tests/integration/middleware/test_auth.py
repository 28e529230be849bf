"""The API key is closed by default: every route the app has, walked one by one on a real port,
refuses a caller without the key unless it is on the one open list
(`entrypoints.middleware.auth.OPEN`). A route added later, by the app or at run time, is closed
without anyone remembering."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from qwen3_asr_server.entrypoints.middleware.auth import OPEN
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import ServerProcess
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn

KEY = "sk-walk"
HEADERS = ({}, {"Authorization": "Bearer sk-wal"}, {"Authorization": f"Basic {KEY}"})


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    live = LiveServer(StandIn(MODEL, describe=True), api_key=KEY)
    yield live
    live.stop()


def _path(route: BaseRoute) -> str:
    template: str = getattr(route, "path", "")
    if isinstance(route, Mount):
        return f"{template}/app.js"  # a file the playground's mount serves
    return re.sub(r"\{[^}]*\}", "whisper-1", template)


def _methods(route: BaseRoute) -> list[str]:
    if isinstance(route, Route) and route.methods:
        return sorted(route.methods - {"HEAD"})
    return ["GET"]


def _handshake(url: str, headers: dict[str, str]) -> int:
    """The status of a WebSocket handshake (101 when it is accepted)."""
    try:
        with connect(url.replace("http://", "ws://"), additional_headers=headers):
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


def _statuses(url: str, route: BaseRoute, headers: dict[str, str]) -> list[int]:
    if isinstance(route, WebSocketRoute):
        return [_handshake(f"{url}{_path(route)}?intent=transcription", headers)]
    found = []
    for method in _methods(route):
        files = {"file": ("a.wav", wav(0.2))} if method == "POST" else None
        answer = httpx.request(method, f"{url}{_path(route)}", headers=headers, files=files)
        found.append(answer.status_code)
        if answer.status_code == 401:
            assert answer.headers["www-authenticate"] == "Bearer"
            assert answer.json()["error"]["type"] == "invalid_request_error"
    return found


def test_every_route_outside_the_open_list_needs_the_key(server: LiveServer) -> None:
    routes = list(server.app.routes)
    assert any(isinstance(route, Mount) for route in routes)
    assert any(isinstance(route, WebSocketRoute) for route in routes)
    closed = [route for route in routes if getattr(route, "path", None) not in OPEN]
    assert {getattr(route, "path", None) for route in closed} >= {
        "/v1/audio/transcriptions",
        "/v1/audio/translations",
        "/v1/chat/completions",
        "/v1/models",
        "/v1/models/{model_id:path}",
        "/v1/realtime",
    }
    for route in closed:
        for headers in HEADERS:
            assert set(_statuses(server.url, route, headers)) == {401}, (route, headers)
    assert server.standin.requests == []  # nothing reached the model
    keyed = {"Authorization": f"Bearer {KEY}"}
    for route in closed:
        assert 401 not in _statuses(server.url, route, keyed), route


def test_every_open_route_answers_without_the_key(server: LiveServer) -> None:
    open_routes = [route for route in server.app.routes if getattr(route, "path", None) in OPEN]
    assert {getattr(route, "path", None) for route in open_routes} == OPEN
    for route in open_routes:
        assert set(_statuses(server.url, route, {})) == {200}, route


def test_a_route_added_later_is_closed(server: LiveServer) -> None:
    async def added() -> dict[str, str]:
        return {"secret": "data"}

    server.app.add_api_route("/v1/added-later", added)
    refused = httpx.get(f"{server.url}/v1/added-later")
    assert refused.status_code == 401
    assert "secret" not in refused.text
    keyed = httpx.get(f"{server.url}/v1/added-later", headers={"Authorization": f"Bearer {KEY}"})
    assert keyed.json() == {"secret": "data"}


def test_a_path_no_route_matches_is_a_404_with_or_without_the_key(server: LiveServer) -> None:
    for headers in ({}, {"Authorization": f"Bearer {KEY}"}):
        missing = httpx.get(f"{server.url}/v1/nothing-here", headers=headers)
        assert missing.status_code == 404
        assert missing.json()["error"]["message"] == "Invalid URL (GET /v1/nothing-here)"


def test_refusals_are_counted_under_their_route(server: LiveServer) -> None:
    httpx.get(f"{server.url}/v1/models")
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'qwen3_asr_requests_total{method="GET",path="/v1/models",status="401"}' in metrics


@pytest.mark.parametrize(
    ("args", "warned"),
    [
        ([], True),  # the default --host 0.0.0.0, no key
        (["--host", "127.0.0.1"], False),
        (["--api-key", KEY], False),
    ],
)
def test_a_server_open_beyond_loopback_without_a_key_says_so_at_start(
    tmp_path: Path, args: list[str], warned: bool
) -> None:
    backend = ThreadedServer(StandIn(MODEL).app).start()
    server = ServerProcess(tmp_path, ["--backend-url", backend.url, "--model", MODEL, *args])
    try:
        server.wait_for_health(200)
    finally:
        server.stop()
        backend.stop()
    said = "anyone who can reach this port can use the model" in server.output()
    assert said is warned
