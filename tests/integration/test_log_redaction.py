"""No secret in any log line: `server.py --log-level debug --api-key KEY` as a process, sent
the key in every wrong place (query parameters of HTTP routes and of the Realtime handshake,
under many names, the path, headers), and the right one; its whole log never shows the key,
nor an ephemeral key it minted, used as it should be and where it should not."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import httpx
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, install_launcher

KEY = "sk-logged-Qv82zXk"
NAMES = ["api_key", "API_KEY", "apiKey", "key", "token", "access_token", "client_secret"]
NAMES += ["auth", "Authorization", "password", "x-api-key", "openai_api_key"]
RIGHT = {"Authorization": f"Bearer {KEY}"}


def _http(server: ServerProcess) -> None:
    query = "&".join(f"{name}={KEY}" for name in NAMES)
    for path in ("/v1/models", "/health", "/ui/languages.json", "/nowhere", f"/v1/models/{KEY}"):
        for headers in ({}, RIGHT, {"X-Api-Key": KEY, "Api-Key": KEY, "Cookie": f"key={KEY}"}):
            httpx.get(f"{server.url}{path}?{query}", headers=headers, timeout=10)
    httpx.get(f"{server.url}/{KEY}", timeout=10)
    upload = httpx.post(
        f"{server.url}/v1/audio/transcriptions?api_key={KEY}",
        files={"file": ("a.wav", wav(0.5))},
        headers=RIGHT,
        timeout=30,
    )
    assert upload.status_code == 200, upload.text
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"GET /v1/models?token={KEY} HTTP/1.1\r\nBad header {KEY}\r\n\r\n".encode())
        with contextlib.suppress(OSError):
            sock.recv(65536)


def _handshake(url: str, **options: object) -> int:
    try:
        with connect(url, open_timeout=10, **options):  # type: ignore[arg-type]
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


def _websocket(server: ServerProcess) -> list[int]:
    base = f"ws://127.0.0.1:{server.port}"
    statuses = []
    for name in NAMES:
        url = f"{base}/v1/realtime?intent=transcription&{name}={KEY}"
        statuses.append(_handshake(url))
        statuses.append(_handshake(url, additional_headers=RIGHT))
        protocols = ["realtime", f"openai-insecure-api-key.{KEY}"]
        statuses.append(_handshake(url, subprotocols=protocols))
    statuses.append(_handshake(f"{base}/v1/realtime/{KEY}?intent=transcription"))
    return statuses


def _ephemeral(server: ServerProcess) -> tuple[str, list[int]]:
    """An ephemeral key minted, then sent in a header, a subprotocol, queries and paths."""
    minted = httpx.post(f"{server.url}/v1/realtime/client_secrets", json={}, headers=RIGHT)
    token: str = minted.json()["value"]
    base = f"ws://127.0.0.1:{server.port}/v1/realtime?intent=transcription"
    statuses = [
        _handshake(base, additional_headers={"Authorization": f"Bearer {token}"}),
        _handshake(base, subprotocols=["realtime", f"openai-insecure-api-key.{token}"]),
        _handshake(f"{base}&client_secret={token}&q={token}"),
        _handshake(f"ws://127.0.0.1:{server.port}/v1/realtime/{token}"),
    ]
    for path in ("/v1/models", f"/v1/models/{token}", f"/health?q={token}"):
        answer = httpx.get(f"{server.url}{path}", headers={"Authorization": f"Bearer {token}"})
        statuses.append(answer.status_code)
    return token, statuses


def test_the_api_key_never_reaches_the_log_wherever_it_is_sent(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    args = ["--model", "m", "--api-key", KEY, "--log-level", "debug"]
    server = ServerProcess(tmp_path, args)
    try:
        server.wait_for_health(200)
        _http(server)
        statuses = _websocket(server)
        token, ephemeral = _ephemeral(server)
    finally:
        server.stop()
    assert 101 in statuses  # the right key was taken, from the header and the subprotocol
    assert 401 in statuses
    assert ephemeral[:2] == [101, 101]  # the ephemeral key opened sessions, and no more:
    assert ephemeral[-3:] == [401, 401, 200]  # the models, but /health is open to anyone
    log = server.output()
    leaks = [line for line in log.splitlines() if KEY.lower() in line.lower() or token in line]
    assert leaks == []
    assert '"WebSocket /v1/realtime?intent=transcription&api_key=***" [accepted]' in log
    assert "status=200" in log  # the app's own access lines are there
    print(f"{len(log.splitlines())} log lines, {log.count('***')} masked, key 0 times")
