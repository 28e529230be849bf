"""Pages of other sites cannot drive a server without a key: a request that changes something
from another site's page is a 403, and a JSON route takes only a body sent as JSON (415), the
one kind a page cannot send without a CORS preflight. The server's own page, the origins
`--allowed-origins` names, the SDKs (no `Origin`) and keyed clients are served as before."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, app_before
from tests.fixtures.standin import StandIn

EVIL = "https://evil.example"
APP = "https://app.example"
OWN = "http://asr.test"  # the harness's base URL: the playground's origin
BATCH = {
    "input_file_id": "file-x",
    "endpoint": "/v1/audio/transcriptions",
    "completion_window": "24h",
}


def _attempts(http: httpx.AsyncClient, origin: str) -> dict[str, Callable[[], Any]]:
    """Each kind of request that changes something, as a page of `origin` sends it (forms
    and `text/plain`, which need no preflight), to be sent when called."""
    page = {"Origin": origin}
    plain = {**page, "Content-Type": "text/plain"}
    clip = {"file": ("a.wav", wav(1.0))}
    return {
        "upload": partial(
            http.post, "/v1/files", files=clip, data={"purpose": "user_data"}, headers=page
        ),
        "batch": partial(http.post, "/v1/batches", content=json.dumps(BATCH), headers=plain),
        "cancel": partial(http.post, "/v1/batches/batch_x/cancel", headers=page),
        "delete": partial(http.delete, "/v1/files/file-x", headers=page),
        "secret": partial(http.post, "/v1/realtime/client_secrets", content="{}", headers=plain),
        "transcription": partial(
            http.post, "/v1/audio/transcriptions", files=clip, data={"model": MODEL}, headers=page
        ),
        "chat": partial(http.post, "/v1/chat/completions", content="{}", headers=plain),
    }


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == ("invalid_request_error", code)


async def test_without_a_key_a_page_of_another_site_changes_nothing(tmp_path: Path) -> None:
    async with app_before(StandIn(MODEL), data_dir=tmp_path) as harness:
        for name, attempt in _attempts(harness.http, EVIL).items():
            response = await attempt()
            _error(response, 403, "origin_not_allowed")
            assert EVIL in response.json()["error"]["message"], name
        assert (await harness.http.get("/v1/files", headers={"Origin": EVIL})).status_code == 200
        assert (await harness.sdk.files.list()).data == []


@pytest.mark.parametrize(
    ("origin", "settings"),
    [(OWN, {}), (APP, {"allowed_origins": [APP]}), (EVIL, {"api_key": "sesame"})],
)
async def test_the_own_page_allowed_origins_and_keyed_clients_are_served(
    tmp_path: Path, origin: str, settings: dict[str, Any]
) -> None:
    keyed = {"Authorization": "Bearer sesame"} if "api_key" in settings else {}
    async with app_before(StandIn(MODEL), data_dir=tmp_path, **settings) as harness:
        harness.http.headers.update(keyed)
        upload = await harness.http.post(
            "/v1/files",
            files={"file": ("a.wav", wav(1.0))},
            data={"purpose": "user_data"},
            headers={"Origin": origin},
        )
        assert upload.status_code == 200, upload.text
        transcribed = await harness.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", wav(1.0))},
            data={"model": MODEL},
            headers={"Origin": origin},
        )
        assert transcribed.status_code == 200, transcribed.text
        body = {**BATCH, "input_file_id": upload.json()["id"]}
        batch = await harness.http.post("/v1/batches", json=body, headers={"Origin": origin})
        assert batch.json()["error"]["param"] == "input_file_id"  # read, by its route


async def test_a_json_route_takes_only_a_body_sent_as_json(tmp_path: Path) -> None:
    async with app_before(StandIn(MODEL), data_dir=tmp_path) as harness:
        for name, attempt in _attempts(harness.http, OWN).items():
            if name in ("batch", "secret", "chat"):
                response = await attempt()
                _error(response, 415, "unsupported_media_type")
                assert "text/plain" in response.json()["error"]["message"]
        untyped = await harness.http.post("/v1/realtime/client_secrets", content=b"{}")
        _error(untyped, 415, "unsupported_media_type")
        form = await harness.http.post("/v1/batches", data=BATCH)
        _error(form, 415, "unsupported_media_type")
        secret = await harness.sdk.realtime.client_secrets.create()  # the SDK sends JSON
        assert secret.value.startswith("ek_")
        charset = {"Content-Type": "application/json; charset=utf-8"}
        chat = await harness.http.post("/v1/chat/completions", content="{", headers=charset)
        _error(chat, 400, "invalid_json")  # JSON, read
