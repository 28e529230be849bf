"""Many keys, one server (`--keys-file`): each key served through the openai SDK beside
`--api-key`, a key taken out of the file refused within 5 s in every worker with no restart,
the ephemeral keys it minted with it, and a file that does not hold together refused at start
in one line."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import AuthenticationError, OpenAI, RateLimitError
from websockets.exceptions import InvalidStatus

from tests.fixtures import metrics
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL
from tests.fixtures.process import ServerProcess
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.integration.realtime.test_client_secrets import SESSION, bearer
from tests.integration.realtime.test_handshakes import refusal
from tests.integration.realtime.test_realtime import serving, session

ADMIN = "sk-admin"
KEYS = """
[[projects]]
name = "notes"

[[projects]]
name = "calls"

[[keys]]
name = "notes-web"
project = "notes"
key = "sk-notes"

[[keys]]
name = "calls-batch"
project = "calls"
key = "sk-calls"
"""
LIMITED = """
[[keys]]
name = "limited"
project = "calls"
key = "sk-limited"
requests_per_minute = 5
"""
WITHOUT_NOTES = KEYS.replace(
    '[[keys]]\nname = "notes-web"\nproject = "notes"\nkey = "sk-notes"', ""
)


def models(url: str, key: str | None) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{url}/v1/models", headers=headers).status_code


async def answers(url: str, key: str) -> int:
    async with httpx.AsyncClient() as http:
        found = await http.get(f"{url}/v1/models", headers={"Authorization": f"Bearer {key}"})
    return found.status_code


async def within(seconds: float, url: str, key: str, status: int) -> None:
    """Wait until `key` is answered `status`; fail the test after `seconds`."""
    start = time.monotonic()
    while await answers(url, key) != status:
        assert time.monotonic() - start < seconds, f"not within {seconds} s"
        await asyncio.sleep(0.1)


async def write(path: Path, text: str) -> None:
    await asyncio.to_thread(path.write_text, text)


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(KEYS)
    return path


def test_a_key_past_its_rate_gets_openais_429_and_headers_while_others_are_served(
    keys_file: Path,
) -> None:
    keys_file.write_text(KEYS + LIMITED.replace("= 5", "= 3"))
    with serving(api_key=ADMIN, keys_file=keys_file) as ws_url:
        url = ws_url.replace("ws://", "http://")
        limited = OpenAI(base_url=f"{url}/v1", api_key="sk-limited", max_retries=0)
        for left in (2, 1, 0):
            answer = limited.models.with_raw_response.list()
            assert answer.headers["x-ratelimit-limit-requests"] == "3"
            assert answer.headers["x-ratelimit-remaining-requests"] == str(left)
            assert answer.headers["x-ratelimit-reset-requests"].endswith("s")
        with pytest.raises(RateLimitError) as refused:
            limited.audio.transcriptions.create(model=MODEL, file=("a.wav", wav(0.5)))
        assert refused.value.code == "rate_limit_exceeded"
        assert "'limited' may send 3 per minute" in refused.value.message
        assert 1 <= int(refused.value.response.headers["retry-after"]) <= 20
        assert refused.value.response.headers["x-ratelimit-remaining-requests"] == "0"
        other = OpenAI(base_url=f"{url}/v1", api_key="sk-calls").models.with_raw_response.list()
        assert other.status_code == 200
        assert "x-ratelimit-limit-requests" not in other.headers  # no limit of its own
        assert models(url, "sk-limited") == 429
        shown = httpx.get(f"{url}/metrics").text
        assert metrics.value(shown, 'qwen3_asr_rejected_total{reason="rate_limit"}') == 2


async def opens(url: str, key: str) -> int:
    """The status of a session's handshake with `key` (101: it opened; it is closed again)."""
    try:
        async with session(url, **bearer(key)):
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


async def test_a_key_at_its_session_cap_is_refused_while_another_opens_one(
    keys_file: Path,
) -> None:
    capped = KEYS.replace('key = "sk-notes"', 'key = "sk-notes"\nmax_sessions = 1')
    await write(keys_file, capped)
    with serving(api_key=ADMIN, keys_file=keys_file) as ws_url:
        url = ws_url.replace("ws://", "http://")
        minted = OpenAI(base_url=f"{url}/v1", api_key="sk-notes").realtime.client_secrets
        token = minted.create(session=SESSION).value
        async with session(ws_url, **bearer("sk-notes")):
            for key in ("sk-notes", token):  # its ephemeral key is its
                status, error, headers = await refusal(ws_url, **bearer(key))
                assert (status, error["code"]) == (429, "session_limit_reached")
                assert "'notes-web' has 1 Realtime sessions open" in error["message"]
                assert headers["Retry-After"]
            async with session(ws_url, **bearer("sk-calls")), session(ws_url, **bearer(ADMIN)):
                pass
        # its seat is given back once the server has seen the session close
        start = time.monotonic()
        while (status := await opens(ws_url, token)) == 429:
            assert time.monotonic() - start < 5, "the seat was never given back"
            await asyncio.sleep(0.05)
        assert status == 101


def test_each_key_of_the_file_is_served_beside_the_api_key_and_others_are_not(
    keys_file: Path,
) -> None:
    with serving(api_key=ADMIN, keys_file=keys_file) as ws_url:
        url = ws_url.replace("ws://", "http://")
        for key in (ADMIN, "sk-notes", "sk-calls"):
            listed = OpenAI(base_url=f"{url}/v1", api_key=key).models.list()
            assert listed.data[0].id == MODEL
        with pytest.raises(AuthenticationError) as refused:
            OpenAI(base_url=f"{url}/v1", api_key="sk-note").models.list()
        assert refused.value.code == "invalid_api_key"
        assert models(url, None) == 401
        assert httpx.get(f"{url}/health").status_code == 200


async def test_a_key_taken_out_of_the_file_is_refused_with_the_secrets_it_minted(
    keys_file: Path,
) -> None:
    with serving(api_key=ADMIN, keys_file=keys_file) as ws_url:
        url = ws_url.replace("ws://", "http://")
        minted = OpenAI(base_url=f"{url}/v1", api_key="sk-notes").realtime.client_secrets
        token = minted.create(session=SESSION).value
        async with session(ws_url, **bearer(token)):
            pass

        await write(keys_file, WITHOUT_NOTES)
        await within(5, url, "sk-notes", 401)
        status, error, _ = await refusal(ws_url, **bearer(token))
        assert (status, error["code"]) == (401, "invalid_api_key")
        assert "revoked" in error["message"]
        assert await answers(url, "sk-calls") == 200
        async with session(ws_url, **bearer("sk-calls")):
            pass

        await write(keys_file, "[[keys]\n")  # broken: the keys before it stay
        await asyncio.sleep(2.5)
        assert await answers(url, "sk-calls") == await answers(url, ADMIN) == 200
        assert await answers(url, "sk-notes") == 401
        await write(keys_file, KEYS)  # back again, with no restart
        await within(5, url, "sk-notes", 200)


@pytest.fixture
def backend() -> Iterator[str]:
    server = ThreadedServer(StandIn(MODEL).app).start()
    yield server.url
    server.stop()


def test_every_worker_holds_a_keys_rate_and_takes_a_change_within_5_seconds(
    tmp_path: Path, keys_file: Path, backend: str
) -> None:
    keys_file.write_text(KEYS + LIMITED)
    args = ["--backend-url", backend, "--model", MODEL, "--workers", "2"]
    server = ServerProcess(tmp_path, [*args, "--keys-file", str(keys_file)])
    try:
        server.wait_for_health(200)
        assert {models(server.url, "sk-notes") for _ in range(20)} == {200}
        # new connections each, spread over both workers: 5 a minute in all, not 5 each
        statuses = [models(server.url, "sk-limited") for _ in range(12)]
        assert statuses == [200] * 5 + [429] * 7
        keys_file.write_text(WITHOUT_NOTES + LIMITED)
        time.sleep(5)
        # new connections each: the kernel spreads them over both workers' sockets
        assert {models(server.url, "sk-notes") for _ in range(40)} == {401}
        assert {models(server.url, "sk-calls") for _ in range(20)} == {200}
    finally:
        server.stop()


def test_a_file_that_does_not_hold_together_stops_the_server_at_start_in_one_line(
    tmp_path: Path, keys_file: Path, backend: str
) -> None:
    keys_file.write_text(KEYS.replace('project = "calls"', 'project = "call"'))
    server = ServerProcess(
        tmp_path, ["--backend-url", backend, "--model", MODEL, "--keys-file", str(keys_file)]
    )
    assert server.wait_exit() == 1
    said = [line for line in server.output().splitlines() if line.strip()]
    assert said == [
        f"qwen3-asr-server: error: --keys-file {keys_file}: the key 'calls-batch' names an "
        "unknown project 'call'"
    ]
