"""POST /v1/realtime/client_secrets, and the sessions its ephemeral keys open: minted with the
API key through the openai SDK, used over the WebSocket as a browser or the SDK would, refused
everywhere else, once expired, and when another server (or anyone) made them."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI, AuthenticationError, BadRequestError
from openai.types.realtime import ClientSecretCreateResponse
from openai.types.realtime.realtime_transcription_session_create_response import (
    RealtimeTranscriptionSessionCreateResponse,
)
from pydantic import SecretStr

from qwen3_asr_server.entrypoints.middleware.ephemeral_keys import ClientSecrets, Grant
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT, keyring
from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL
from tests.fixtures.process import ServerProcess, listening, workers
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.fixtures.websocket import connect
from tests.integration.realtime.test_handshakes import refusal
from tests.integration.realtime.test_realtime import serving, session

KEY = "sk-secrets-test"
SECRETS = "/v1/realtime/client_secrets"
SESSION: dict[str, Any] = {
    "type": "transcription",
    "include": ["item.input_audio_transcription.logprobs"],
    "audio": {
        "input": {
            "format": {"type": "audio/pcm", "rate": 24000},
            "transcription": {"model": MODEL, "language": "de", "prompt": "Hermes"},
            "turn_detection": None,
        }
    },
}


def alter(token: str) -> str:
    """`token` with one character of its middle changed (every bit of it counts there)."""
    middle = len(token) // 2
    return token[:middle] + ("B" if token[middle] == "A" else "A") + token[middle + 1 :]


def client(url: str, key: str = KEY) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=url.replace("ws://", "http://") + "/v1", api_key=key)


async def mint(url: str, **asked: Any) -> ClientSecretCreateResponse:
    return await client(url).realtime.client_secrets.create(**asked)


def bearer(token: str) -> dict[str, Any]:
    return {"additional_headers": {"Authorization": f"Bearer {token}"}}


async def opened(url: str, **kwargs: Any) -> dict[str, Any]:
    """The session a handshake opens, as its `session.created` shows it."""
    async with connect(f"{url}/v1/realtime?intent=transcription", **kwargs) as ws:
        created = json.loads(await ws.recv())
    assert created["type"] == "session.created"
    shown: dict[str, Any] = created["session"]
    return shown


async def test_a_client_secret_opens_sessions_configured_as_it_was_minted() -> None:
    with serving(api_key=KEY) as url:
        before = int(time.time())
        minted = await mint(
            url, expires_after={"anchor": "created_at", "seconds": 60}, session=SESSION
        )
        assert minted.value.startswith("ek_")
        assert before + 60 <= minted.expires_at <= int(time.time()) + 60
        assert isinstance(minted.session, RealtimeTranscriptionSessionCreateResponse)
        audio_input = minted.session.audio.input  # type: ignore[union-attr]
        assert audio_input.transcription.language == "de"  # type: ignore[union-attr]
        assert audio_input.turn_detection is None  # type: ignore[union-attr]
        assert minted.session.include == ["item.input_audio_transcription.logprobs"]
        shown = minted.model_dump(mode="json", exclude_unset=True)["session"]
        protocols = ["realtime", f"openai-insecure-api-key.{minted.value}"]
        for how in (bearer(minted.value), {"subprotocols": protocols}):  # a secret opens many
            created = await opened(url, **how)
            assert created["id"] != shown["id"]
            assert {**created, "id": shown["id"]} == shown
        sdk = client(url, minted.value).realtime.connect(extra_query={"intent": "transcription"})
        async with sdk as connection:
            first = await connection.recv()
            assert first.type == "session.created"
            assert first.session.audio.input.transcription.prompt == "Hermes"  # type: ignore[union-attr]


async def test_an_ephemeral_key_opens_realtime_sessions_and_nothing_else() -> None:
    with serving(api_key=KEY) as url:
        token = (await mint(url)).value
        with pytest.raises(AuthenticationError) as refused:
            await client(url, token).realtime.client_secrets.create()  # no secret from a secret
        assert "opens Realtime sessions only" in refused.value.message
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url.replace("ws://", "http://")) as http:
            upload = await http.post(
                "/v1/audio/transcriptions", files={"file": ("a.wav", wav(0.5))}, headers=headers
            )
            models = await http.get("/v1/models", headers=headers)
            health = await http.get("/health", headers=headers)
        for answer in (upload, models):
            assert answer.status_code == 401
            assert answer.json()["error"]["code"] == "invalid_api_key"
        assert health.status_code == 200  # open to anyone anyway
        shown = await opened(url, **bearer(token))  # the defaults: it was minted bare
        assert shown["audio"]["input"]["turn_detection"]["type"] == "server_vad"


async def test_expired_foreign_and_altered_keys_are_refused_and_the_server_serves_on() -> None:
    ours, theirs = keyring(None, SecretStr(KEY)), keyring(None, SecretStr("sk-another-server"))
    expired = ClientSecrets(ours).mint(Grant(int(time.time()) - 1, SESSION), ours.named(DEFAULT))
    foreign = ClientSecrets(theirs).mint(Grant(2**40, SESSION), theirs.named(DEFAULT))
    with serving(api_key=KEY) as url:
        token = (await mint(url, session=SESSION)).value
        altered = alter(token)
        status, error, headers = await refusal(url, **bearer(expired))
        assert (status, error["code"], headers["WWW-Authenticate"]) == (
            401,
            "invalid_api_key",
            "Bearer",
        )
        assert "expired at" in error["message"]
        for bad in (foreign, altered, "ek_nothing-at-all"):
            status, error, _ = await refusal(url, **bearer(bad))
            assert (status, error["code"]) == (401, "invalid_api_key")
            assert "did not mint it" in error["message"]
        async with session(url, **bearer(token)):
            pass
        async with session(url, **bearer(KEY)):
            pass


async def _refused(url: str, body: Any) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            url.replace("ws://", "http://") + SECRETS,
            content=body if isinstance(body, bytes) else json.dumps(body),
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        )
    assert answer.status_code == 400, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


async def test_a_bad_request_is_a_400_naming_the_field() -> None:
    ga = {"type": "transcription"}
    cases: list[tuple[Any, str | None]] = [
        ({"expires_after": {"seconds": 9}}, "expires_after.seconds"),
        ({"expires_after": {"seconds": 7201}}, "expires_after.seconds"),
        ({"expires_after": {"seconds": "soon"}}, "expires_after.seconds"),
        ({"expires_after": {"anchor": "last_active_at"}}, "expires_after.anchor"),
        ({"session": {"type": "realtime", "model": "gpt-realtime"}}, "session.type"),
        ({"session": {**ga, "audio": {"input": {"format": {"rate": 8000}}}}}, None),
        ({"session": {**ga, "audio": {"input": {"transcription": {"model": "nope"}}}}}, None),
        (
            {"session": {**ga, "tracing": {"workflow_name": "x" * 7000}}},
            None,
        ),  # ignored, but carried
        ({"lifetime": 60}, "lifetime"),
        (b"{not json", None),
    ]
    with serving(api_key=KEY) as url:
        params = [(await _refused(url, body))["param"] for body, _ in cases]
        assert params == [param for _, param in cases[:5]] + [
            "session.audio.input.format.rate",
            "session.audio.input.transcription.model",
            "session",
            "lifetime",
            None,
        ]
        with pytest.raises(BadRequestError) as refused:
            await mint(url, session={"type": "realtime"})
        assert "transcription sessions only" in refused.value.message
        with pytest.raises(AuthenticationError):
            await client(url, "sk-wrong").realtime.client_secrets.create()
        assert (await mint(url)).value.startswith("ek_")


async def test_without_an_api_key_secrets_are_minted_and_carry_their_session() -> None:
    with serving() as url:
        minted = await mint(url, session=SESSION)
        shown = await opened(url, **bearer(minted.value))
        assert shown["audio"]["input"]["transcription"]["language"] == "de"
        status, error, _ = await refusal(url, **bearer(alter(minted.value)))
        assert status == 401
        assert "did not mint it" in error["message"]


async def test_secrets_minted_by_one_worker_open_sessions_on_the_others(tmp_path: Path) -> None:
    """With --workers 2: each secret minted on a new connection and used on another, so that
    the workers serve both in every combination, and every session opens as minted."""
    standin = ThreadedServer(StandIn(MODEL, describe=True).app).start()
    args = ["--backend-url", standin.url, "--model", MODEL, "--workers", "2", "--api-key", KEY]
    server = ServerProcess(tmp_path, args)
    try:
        server.wait_for_health(200)
        deadline = time.monotonic() + 20
        while not (len(found := workers(server.proc.pid)) == 2 and found <= listening(server.port)):
            assert time.monotonic() < deadline, "the two workers never both listened"
            await asyncio.sleep(0.1)
        url = server.url.replace("http://", "ws://")
        for language in ("de", "fr", "ja", "en", "es", "it"):
            asked = {
                "type": "transcription",
                "audio": {"input": {"transcription": {"language": language}}},
            }
            token = (await mint(url, session=asked)).value
            shown = await opened(url, **bearer(token))
            assert shown["audio"]["input"]["transcription"]["language"] == language
    finally:
        server.stop()
        standin.stop()
