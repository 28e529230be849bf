"""The playground's routes over HTTP: what they serve, the headers that lock the page down,
and `--no-ui`. What the page does in a browser: tests/browser."""

from __future__ import annotations

import re

import httpx
import pytest

from qwen3_asr_server.model.languages import SUPPORTED
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.standin import StandIn


def check_locked_down(headers: httpx.Headers) -> None:
    policy = headers["content-security-policy"]
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    assert "frame-ancestors 'none'" in policy
    assert "default-src 'none'" in policy
    sources = re.findall(r"(?:https?|wss?)://\S+", policy)
    assert sources == []  # no other origin, nor a CDN
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


async def test_the_page_and_every_file_it_names_are_served_locked_down(harness: Harness) -> None:
    page = await harness.http.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-cache"
    check_locked_down(page.headers)
    assert "<script>" not in page.text  # nothing inline for the policy to allow
    assert " style=" not in page.text
    named = re.findall(r'(?:src|href)="(/[^"]*)"', page.text)
    assert "/ui/app.js" in named
    scripts = ["/ui/api.js", "/ui/files.js", "/ui/live.js", "/ui/transports.js", "/ui/capture.js"]
    for path in [*named, *scripts]:
        response = await harness.http.get(path)
        assert response.status_code == 200, path
        if path.startswith("/ui/"):
            check_locked_down(response.headers)
    script = await harness.http.get("/ui/app.js")
    assert script.headers["content-type"].split(";")[0] in (
        "text/javascript",
        "application/javascript",
    )
    assert (await harness.http.head("/")).status_code == 200


async def test_the_page_needs_no_key_but_the_api_it_calls_does() -> None:
    async with app_before(StandIn(MODEL), api_key="sesame") as harness:
        assert (await harness.http.get("/")).status_code == 200
        assert (await harness.http.get("/ui/app.js")).status_code == 200
        assert (await harness.http.get("/v1/models")).status_code == 401


async def test_the_language_pickers_list_the_apis_languages(harness: Harness) -> None:
    listed = (await harness.http.get("/ui/languages.json")).json()
    assert listed == [{"code": each.code, "name": each.name} for each in SUPPORTED]


@pytest.mark.parametrize("path", ["/ui/../settings.py", "/ui/%2e%2e/app.py", "/ui/nothing.js"])
async def test_nothing_outside_the_page_files_is_served(harness: Harness, path: str) -> None:
    response = await harness.http.get(path)
    assert response.status_code == 404


async def test_no_ui_removes_the_routes() -> None:
    async with app_before(StandIn(MODEL), ui=False) as harness:
        for path in ("/", "/ui/app.js", "/ui/languages.json"):
            response = await harness.http.get(path)
            assert response.status_code == 404
            assert set(response.json()["error"]) == {"message", "type", "param", "code"}
        assert (await harness.http.get("/health")).status_code == 200


@pytest.mark.parametrize("path", ["/docs", "/docs/oauth2-redirect", "/redoc"])
async def test_no_page_on_this_origin_loads_a_script_from_elsewhere(
    harness: Harness, path: str
) -> None:
    """FastAPI's API readers (Swagger UI, ReDoc) load theirs from a CDN: they are not served,
    and the schema they would read is."""
    response = await harness.http.get(path)
    assert response.status_code == 404
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}
    assert (await harness.http.get("/openapi.json")).json()["paths"]


async def test_the_page_and_its_files_are_counted_under_their_routes(harness: Harness) -> None:
    for path in ("/", "/ui/app.js", "/ui/languages.json"):
        assert (await harness.http.get(path)).status_code == 200
    metrics = (await harness.http.get("/metrics")).text
    for template in ("/", "/ui", "/ui/languages.json"):
        assert f'method="GET",path="{template}",status="200"}} 1.0' in metrics, template
    assert 'path="unmatched"' not in metrics


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/ui/app.js", "/ui/languages.json", "/ui/nothing.js"])
async def test_the_page_and_its_files_answer_get_and_head_only(
    harness: Harness, path: str, method: str
) -> None:
    response = await harness.http.request(method, path, content=b"{}")
    assert response.status_code == 405
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert {each.strip() for each in response.headers["allow"].split(",")} == {"GET", "HEAD"}
    assert (await harness.http.head(path)).status_code in (200, 404)
