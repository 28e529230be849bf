"""A `user_data` recording too short to hold speech (a WAV header and a few samples) is a
400 at upload, as OpenAI's minimum of 0.1 s has it, not a file every line naming it fails on."""

from __future__ import annotations

import pytest

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, app_before
from tests.fixtures.standin import StandIn


@pytest.mark.parametrize("seconds", [0.0005, 0.099])
async def test_a_recording_shorter_than_a_tenth_of_a_second_is_refused(seconds: float) -> None:
    async with app_before(StandIn(MODEL)) as harness:
        clip = wav(seconds)
        answer = await harness.http.post(
            "/v1/files", files={"file": ("a.wav", clip)}, data={"purpose": "user_data"}
        )
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            "file",
            "audio_too_short",
        )
        assert "at least 0.1 s" in error["message"]
        assert (await harness.sdk.files.list()).data == []
        kept = await harness.sdk.files.create(file=("b.wav", wav(0.1)), purpose="user_data")
        assert kept.bytes == len(wav(0.1))
