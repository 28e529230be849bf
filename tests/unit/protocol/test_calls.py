"""What POST /v1/realtime/calls takes: the offer and the session, checked before any work."""

from __future__ import annotations

import json

import pytest

from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.entrypoints.realtime.offers import checked_sdp, session_config
from qwen3_asr_server.entrypoints.realtime.protocol import SessionConfig
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model.catalog import Catalog

POLICY = Policy(Catalog("qwen3-asr", ["gpt-4o-transcribe"], 0), 100, 1000)
OFFER = (
    "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 x 111\r\na=fingerprint:sha-256 AB:CD\r\n"
    "m=application 9 x\r\n"
)


@pytest.mark.parametrize(
    ("sdp", "said"),
    [
        ("", "not SDP"),
        ("hello\r\nv=0\r\n", "not SDP"),
        (OFFER.replace("m=audio", "m=video"), "m=audio"),
        (OFFER.replace("m=application", "m=video"), "m=application"),
        (OFFER + "m=audio 9 x 111\r\n" * 3, "5 media sections"),
        (OFFER.replace("a=fingerprint:", "a=fingerprints:"), "DTLS fingerprint"),
    ],
)
def test_an_offer_must_be_sdp_with_audio_a_channel_and_a_fingerprint(sdp: str, said: str) -> None:
    with pytest.raises(APIError) as refused:
        checked_sdp(sdp)
    assert (refused.value.status, refused.value.param, refused.value.code) == (
        400,
        "sdp",
        "invalid_offer",
    )
    assert said in refused.value.message
    assert checked_sdp(OFFER) == OFFER


def test_the_session_is_read_as_a_session_update_would_be() -> None:
    assert session_config(None, POLICY) == SessionConfig()
    given = {"type": "transcription", "audio": {"input": {"transcription": {"prompt": "Hi."}}}}
    assert session_config(json.dumps(given), POLICY).prompt == "Hi."


@pytest.mark.parametrize(
    ("session", "param", "code"),
    [
        ("{", "session", "invalid_json"),
        ("[]", "session", "invalid_type"),
        ('{"type": "realtime"}', "session.type", "invalid_value"),
        (
            '{"audio": {"input": {"transcription": {"model": "whisper-9"}}}}',
            "session.audio.input.transcription.model",
            "model_not_found",
        ),
    ],
)
def test_a_bad_session_is_a_400_naming_its_field(session: str, param: str, code: str) -> None:
    with pytest.raises(APIError) as refused:
        session_config(session, POLICY)
    assert (refused.value.status, refused.value.param, refused.value.code) == (400, param, code)
