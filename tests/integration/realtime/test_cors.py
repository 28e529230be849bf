"""CORS on the two routes a web app of another origin calls (minting an ephemeral key, sending
a WebRTC offer), for the origins `--allowed-origins` names and no others; the rest of the API
sends none. The browser itself is in tests/browser/test_webrtc.py."""

from __future__ import annotations

from tests.fixtures.harness import MODEL, app_before
from tests.fixtures.standin import StandIn

KEY = "sk-cors"
APP = "https://app.example.com"
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,content-type",
}


async def test_the_allowed_origin_may_mint_and_call_and_read_the_answers() -> None:
    async with app_before(StandIn(MODEL), api_key=KEY, allowed_origins=[APP + "/"]) as server:
        http = server.http
        for path in ("/v1/realtime/client_secrets", "/v1/realtime/calls"):
            asked = await http.options(path, headers={"Origin": APP, **PREFLIGHT})
            assert asked.status_code == 200  # no key: a preflight carries none
            assert asked.headers["access-control-allow-origin"] == APP
            assert asked.headers["access-control-allow-methods"] == "POST"
            allowed = asked.headers["access-control-allow-headers"].lower()
            assert {"authorization", "content-type"} <= set(allowed.split(", "))
        key = {"Origin": APP, "Authorization": f"Bearer {KEY}"}
        minted = await http.post(
            "/v1/realtime/client_secrets", json={"session": {"type": "transcription"}}, headers=key
        )
        assert minted.status_code == 200
        assert minted.headers["access-control-allow-origin"] == APP
        sdp = {"Origin": APP, "Content-Type": "application/sdp"}
        refused = await http.post("/v1/realtime/calls", content="v=0", headers=sdp)
        assert refused.status_code == 401  # without a key: a refusal the page can read
        assert refused.headers["access-control-allow-origin"] == APP
        assert "Location" in refused.headers["access-control-expose-headers"]


async def test_other_origins_and_other_routes_get_no_cors() -> None:
    async with app_before(StandIn(MODEL), api_key=KEY, allowed_origins=[APP]) as server:
        http = server.http
        other = await http.options(
            "/v1/realtime/calls", headers={"Origin": "https://elsewhere.example", **PREFLIGHT}
        )
        assert "access-control-allow-origin" not in other.headers
        for path in ("/v1/audio/transcriptions", "/v1/files"):
            asked = await http.options(path, headers={"Origin": APP, **PREFLIGHT})
            assert "access-control-allow-origin" not in asked.headers
        models = await http.get(
            "/v1/models", headers={"Origin": APP, "Authorization": f"Bearer {KEY}"}
        )
        assert models.status_code == 200
        assert "access-control-allow-origin" not in models.headers
