"""Client secrets as tokens: what one carries, who can open it, until when; and the session
configuration it asks for."""

from __future__ import annotations

import re

import pybase64
import pytest
from pydantic import SecretStr

from qwen3_asr_server.entrypoints.middleware.ephemeral_keys import (
    MAX_CHARS,
    PREFIX,
    ClientSecrets,
    Grant,
    is_ephemeral,
)
from qwen3_asr_server.entrypoints.middleware.keys import DEFAULT, keyring
from qwen3_asr_server.entrypoints.realtime.client_secrets import session_config
from qwen3_asr_server.entrypoints.realtime.protocol import ServerVad, SessionConfig
from qwen3_asr_server.errors import APIError, EventError
from qwen3_asr_server.model import languages
from qwen3_asr_server.observability.log_redaction import redact

KEY = "sk-server-one"
NOW = 1_800_000_000
SESSION = {
    "type": "transcription",
    "audio": {"input": {"transcription": {"language": "de", "prompt": "Hermes"}}},
}
# what may stand in a WebSocket subprotocol (RFC 6455: an HTTP token) after `ek_`
TOKEN = re.compile(r"ek_[A-Za-z0-9_-]+")


def server(api_key: str | None, keys_file: str | None = None) -> ClientSecrets:
    """The secrets of a server with this `--api-key` and keys file."""
    return ClientSecrets(keyring(keys_file, SecretStr(api_key) if api_key else None))


def minted(secrets: ClientSecrets, grant: Grant, name: str = DEFAULT) -> str:
    """A secret minted on `secrets`' server by its key `name` (by no key on a keyless one)."""
    return secrets.mint(grant, secrets.keyring.named(name))


def refusal(secrets: ClientSecrets, token: str, now: float = NOW) -> APIError:
    with pytest.raises(APIError) as refused:
        secrets.open(token, now)
    assert (refused.value.status, refused.value.code) == (401, "invalid_api_key")
    return refused.value


def test_a_secret_carries_its_session_and_expiry_to_any_server_with_the_key() -> None:
    token = minted(server(KEY), Grant(NOW + 600, SESSION))
    assert TOKEN.fullmatch(token)
    assert is_ephemeral(token)
    assert len(token) < 300
    another_worker = server("sk-server-one")
    assert another_worker.open(token, NOW + 599) == Grant(NOW + 600, SESSION, DEFAULT)
    assert "sk-server-one" not in pybase64.urlsafe_b64decode(token[3:] + "==").decode("latin-1")


def test_an_expired_secret_is_refused_saying_when_it_expired() -> None:
    token = minted(server(KEY), Grant(NOW, SESSION))
    error = refusal(server(KEY), token, now=NOW)
    assert "expired at 2027-01-15T08:00:00+00:00" in error.message
    assert "POST /v1/realtime/client_secrets" in error.message


def test_a_secret_of_another_key_or_altered_or_made_up_is_refused() -> None:
    mine = server(KEY)
    foreign = minted(server("sk-server-two"), Grant(NOW + 600, SESSION))
    token = minted(mine, Grant(NOW + 600, SESSION))
    payload = pybase64.urlsafe_b64decode(token[3:] + "==")
    longer = payload.replace(b'"e":1800000600', b'"e":1900000600')
    altered = PREFIX + pybase64.urlsafe_b64encode(longer).decode().rstrip("=")
    for bad in (foreign, altered, token[:-4], token + "A", "ek_", "ek_!!!!", "ek_" + "A" * 80):
        assert "did not mint it" in refusal(mine, bad).message
    assert "did not mint it" in refusal(server(None), token).message


NOTES = """
[[projects]]
name = "notes"

[[keys]]
name = "notes-web"
project = "notes"
key = "sk-notes"
"""


def test_a_secret_names_its_key_and_opens_nothing_once_that_key_is_gone() -> None:
    before = server(KEY, NOTES)
    token = minted(before, Grant(NOW + 600, SESSION), "notes-web")
    assert before.open(token, NOW).key == "notes-web"
    assert server(None, NOTES).open(token, NOW).key == "notes-web"  # another worker
    assert "revoked" in refusal(server(KEY), token).message  # the key left the file
    rotated = NOTES.replace("sk-notes", "sk-notes-2")
    assert "did not mint it" in refusal(server(KEY, rotated), token).message
    by_api_key = minted(before, Grant(NOW + 600, SESSION))
    raw = pybase64.urlsafe_b64decode(by_api_key[3:] + "==")
    claimed = raw.replace(b'"k":"default"', b'"k":"notes-web"')
    assert claimed != raw
    forged = PREFIX + pybase64.urlsafe_b64encode(claimed).decode().rstrip("=")
    assert "did not mint it" in refusal(before, forged).message


def test_without_an_api_key_secrets_still_carry_their_session() -> None:
    token = minted(server(None), Grant(NOW + 10, SESSION))
    assert server(None).open(token, NOW).session == SESSION
    assert "did not mint it" in refusal(server(KEY), token).message


def test_a_session_too_large_for_a_header_is_refused_when_minted() -> None:
    session = {**SESSION, "audio": {"input": {"transcription": {"prompt": "x" * MAX_CHARS}}}}
    with pytest.raises(EventError) as refused:
        minted(server(KEY), Grant(NOW, session))
    assert refused.value.param == "session"
    assert f"at most {MAX_CHARS}" in refused.value.message


def test_the_session_asked_for_is_the_configuration_a_session_update_makes() -> None:
    session = {
        "type": "transcription",
        "include": ["item.input_audio_transcription.logprobs"],
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": 16000},
                "transcription": {"language": "de", "keywords": ["Hermes"]},
                "turn_detection": {"type": "server_vad", "silence_duration_ms": 300},
            }
        },
    }
    assert session_config(session) == SessionConfig(
        sample_rate=16000,
        language=languages.resolve("de"),
        keywords=("Hermes",),
        turn_detection=ServerVad(silence_duration_ms=300),
        logprobs=True,
    )
    assert session_config({}) == SessionConfig()


@pytest.mark.parametrize(
    ("session", "param"),
    [
        ({"type": "realtime"}, "session.type"),
        ({"type": "transcription", "audio": {"input": {"format": {"rate": 8000}}}}, None),
        ({"type": "transcription", "input_audio_format": "pcm16"}, "session.input_audio_format"),
    ],
)
def test_a_bad_session_is_refused_naming_its_field(session: dict[str, str], param: str) -> None:
    with pytest.raises(EventError) as refused:
        session_config(session)
    assert refused.value.param == (param or "session.audio.input.format.rate")
    if param == "session.type":
        assert "transcription sessions only" in refused.value.message
        assert "'realtime'" in refused.value.message


def test_no_ephemeral_key_reaches_a_log_line() -> None:
    token = minted(server(KEY), Grant(NOW, SESSION))
    assert redact(f"Bearer {token}") == "Bearer ek_***"
    assert redact(f"/v1/realtime?client_secret={token}") == "/v1/realtime?client_secret=***"
    assert redact(f"openai-insecure-api-key.{token}, realtime") == (
        "openai-insecure-api-key.ek_***, realtime"
    )
    assert redact("seek_a_way_through_the_woods") == "seek_a_way_through_the_woods"
    assert is_ephemeral("sk-server-one") is False
    assert is_ephemeral(None) is False
