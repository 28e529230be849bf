"""Who may open a Realtime session: pages of other sites may not (unless allowed), and no
more than `--max-sessions` may be open at once, over the whole server."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import InvalidStatus

from tests.fixtures import metrics
from tests.fixtures.harness import MODEL
from tests.fixtures.process import ServerProcess, listening, workers
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.fixtures.websocket import connect
from tests.integration.realtime.test_realtime import serving, session

QUERY = "/v1/realtime?intent=transcription"


async def refusal(url: str, **kwargs: Any) -> tuple[int, dict[str, Any], Any]:
    """The HTTP answer to a refused handshake: status, OpenAI's error, the headers."""
    with pytest.raises(InvalidStatus) as refused:
        async with connect(f"{url}{QUERY}", **kwargs):
            pass
    answer = refused.value.response
    body = json.loads(answer.body or b"{}")
    assert set(body["error"]) == {"message", "type", "param", "code"}
    return answer.status_code, body["error"], answer.headers


def page_at(origin: str) -> dict[str, Any]:
    return {"origin": origin}  # as a browser sends it; SDKs send none


async def test_a_page_of_another_site_cannot_open_a_session() -> None:
    with serving() as url:
        status, error, _ = await refusal(url, **page_at("https://evil.example"))
        assert (status, error["code"]) == (403, "origin_not_allowed")
        assert "https://evil.example" in error["message"]
        status, _, _ = await refusal(url, **page_at("null"))  # a sandboxed frame, a file://
        assert status == 403
        own = url.replace("ws://", "http://")
        async with session(url, **page_at(own)):  # the playground, served here
            pass
        async with session(url):  # no Origin: not a browser
            pass


async def test_allowed_origins_open_it_to_the_pages_named() -> None:
    with serving(allowed_origins=["https://App.Example.com/"]) as url:
        async with session(url, **page_at("https://app.example.com")):
            pass
        status, _, _ = await refusal(url, **page_at("https://app.example.com:8443"))
        assert status == 403
    with serving(allowed_origins=["*"]) as url:
        async with session(url, **page_at("https://anywhere.example")):
            pass


async def test_a_key_does_not_let_another_sites_page_in() -> None:
    with serving(api_key="sk-test") as url:
        headers = {"Authorization": "Bearer sk-test"}
        status, error, _ = await refusal(
            url, additional_headers=headers, **page_at("https://evil.example")
        )
        assert (status, error["code"]) == (403, "origin_not_allowed")


def _metric(http_url: str, series: str) -> float:
    return metrics.value(httpx.get(f"{http_url}/metrics").text, series)


@contextlib.asynccontextmanager
async def sessions(url: str, count: int) -> AsyncIterator[list[ClientConnection]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(session(url)) for _ in range(count)]


async def _full_then_free(url: str, limit: int) -> None:
    """`limit` sessions open; one more is refused; once one ends, a new one opens."""
    http_url = url.replace("ws://", "http://")
    async with sessions(url, limit):
        assert _metric(http_url, "qwen3_asr_realtime_sessions") == limit
        status, error, headers = await refusal(url)
        assert (status, error["code"], error["type"]) == (429, "session_limit_reached", "requests")
        assert headers["Retry-After"] == "5"
        assert f"{limit} Realtime sessions" in error["message"]
    assert _metric(http_url, 'qwen3_asr_rejected_total{reason="session_limit"}') == 1
    async with session(url):
        pass


async def test_no_more_than_max_sessions_are_open_at_once() -> None:
    with serving(max_sessions=2) as url:
        await _full_then_free(url, 2)
        assert _metric(url.replace("ws://", "http://"), "qwen3_asr_realtime_sessions") == 0


async def test_the_session_limit_holds_for_all_workers_together(tmp_path: Path) -> None:
    """With --workers 2 and --max-sessions 3, whichever workers the sessions come to."""
    standin = ThreadedServer(StandIn(MODEL, describe=True).app).start()
    args = ["--backend-url", standin.url, "--model", MODEL, "--workers", "2"]
    server = ServerProcess(tmp_path, [*args, "--max-sessions", "3"])
    try:
        server.wait_for_health(200)
        for _ in range(400):
            found = workers(server.proc.pid)
            if len(found) == 2 and found <= listening(server.port):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the two workers never both listened")
        await _full_then_free(server.url.replace("http://", "ws://"), 3)
    finally:
        server.stop()
        standin.stop()


async def test_the_api_key_stays_out_of_a_debug_log(tmp_path: Path) -> None:
    """websockets logs every handshake header at debug level: not the client's key, in a
    header or in the subprotocol that carries it."""
    standin = ThreadedServer(StandIn(MODEL, describe=True).app).start()
    key = "client-key-9c1d"
    args = ["--backend-url", standin.url, "--model", MODEL, "--api-key", key]
    server = ServerProcess(tmp_path, [*args, "--log-level", "debug"])
    try:
        server.wait_for_health(200)
        url = server.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
        async with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
            assert json.loads(await ws.recv())["type"] == "session.created"
        protocols = ["realtime", f"openai-insecure-api-key.{key}"]
        async with connect(url, subprotocols=protocols) as ws:  # type: ignore[list-item]
            assert json.loads(await ws.recv())["type"] == "session.created"
    finally:
        server.stop()
        standin.stop()
    log = server.output()
    assert "DEBUG:" in log
    assert log.count('"WebSocket /v1/realtime?intent=transcription" [accepted]') == 2
    assert key not in log
