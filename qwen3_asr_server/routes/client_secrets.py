"""POST /v1/realtime/client_secrets: an ephemeral key for a browser or a phone
(`realtime.secrets`), and the session configuration such a key opens a session with.

Minting takes the API key (the middleware refuses an ephemeral key here: one cannot mint
another); the session asked for is checked as a `session.update` would be, so a bad one is a
400 naming its field, before any secret exists.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from starlette.requests import HTTPConnection

from ..middleware.auth import bearer
from ..protocol import realtime
from ..protocol.body import json_body, read
from ..protocol.client_secrets import ClientSecretCreate, session_config
from ..protocol.realtime import SessionConfig
from ..realtime.secrets import ClientSecrets, Grant, is_ephemeral
from ..realtime.server_events import new_id, session_object
from ..state import AppState, State

router = APIRouter()


@router.post("/v1/realtime/client_secrets")
async def create_client_secret(request: Request, state: State) -> dict[str, Any]:
    body = await json_body(request)
    asked: ClientSecretCreate = read(ClientSecretCreate, body, text=False)
    config = session_config(asked.session)
    realtime.check(config, state.policy)
    expires_at = int(time.time()) + asked.expires_after.seconds
    value = ClientSecrets(state.settings.api_key).mint(Grant(expires_at, asked.session))
    session = session_object(config, new_id("sess"))
    return {"value": value, "expires_at": expires_at, "session": session}


def granted(connection: HTTPConnection, state: AppState) -> SessionConfig | None:
    """The configuration the ephemeral key of a Realtime handshake was minted for; None when
    the client came with the API key (or none). OpenAI's 401 for a key that is expired or not
    this server's, even on a server without `--api-key`: the session it asks for is unknown."""
    token = bearer(connection.scope)
    if not is_ephemeral(token):
        return None
    grant = ClientSecrets(state.settings.api_key).open(token, time.time())
    config = session_config(grant.session)
    realtime.check(config, state.policy)
    return config
