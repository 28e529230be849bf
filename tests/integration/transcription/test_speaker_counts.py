"""`min_speakers` / `max_speakers`: how many spoke, when the client knows, through the HTTP
API as the openai SDK sends them (`extra_body`): three flite voices, the real diarizer, the
stand-in for vLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openai.types.audio import TranscriptionDiarized

from qwen3_asr_server.model.catalog import DIARIZE
from tests.fixtures.conversations import Conversation, conversation, spoken, truth_of
from tests.fixtures.harness import Harness
from tests.integration.transcription.test_diarization import data_url


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """Three speakers, six turns."""
    return conversation(3, 6, tmp_path_factory.mktemp("voices"), seed=3)


async def speakers(described: Harness, talk: Conversation, **count: int) -> set[str]:
    answer = await described.sdk.audio.transcriptions.create(
        model=DIARIZE,
        file=("talk.wav", talk.wav()),
        response_format="diarized_json",
        extra_body=count,
    )
    assert isinstance(answer, TranscriptionDiarized)
    return {segment.speaker for segment in answer.segments}


async def test_the_diarizer_hears_three_without_a_count(
    described: Harness, talk: Conversation
) -> None:
    assert await speakers(described, talk) == {"A", "B", "C"}


async def test_max_speakers_caps_the_speakers(described: Harness, talk: Conversation) -> None:
    assert await speakers(described, talk, max_speakers=2) == {"A", "B"}


async def test_an_exact_count_is_how_many_are_labelled(
    described: Harness, talk: Conversation
) -> None:
    assert await speakers(described, talk, min_speakers=1, max_speakers=1) == {"A"}
    assert await speakers(described, talk, min_speakers=4, max_speakers=4) == {"A", "B", "C", "D"}


async def test_a_count_and_a_known_speaker_together(
    described: Harness, talk: Conversation, tmp_path: Path
) -> None:
    """The count decides how many voices (three heard as two); the reference still names the
    one it sounds like."""
    agent = spoken("awb", "Thank you for calling, how can I help you today?", tmp_path)
    answer = await described.sdk.audio.transcriptions.create(
        model=DIARIZE,
        file=("talk.wav", talk.wav()),
        response_format="diarized_json",
        extra_body={
            "known_speaker_names": ["agent"],
            "known_speaker_references": [data_url(agent, "mp3")],
            "max_speakers": 2,
        },
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert len({segment.speaker for segment in answer.segments}) == 2
    awb = [s for s in answer.segments if truth_of(talk, s.start, s.end) == "awb"]
    assert awb
    assert {segment.speaker for segment in awb} == {"agent"}


@pytest.mark.parametrize(
    ("data", "param", "code"),
    [
        ({"model": DIARIZE, "min_speakers": "0"}, "min_speakers", "invalid_value"),
        ({"model": DIARIZE, "max_speakers": "21"}, "max_speakers", "invalid_value"),
        ({"model": DIARIZE, "max_speakers": "2.5"}, "max_speakers", "invalid_value"),
        (
            {"model": DIARIZE, "min_speakers": "3", "max_speakers": "2"},
            "min_speakers",
            "invalid_value",
        ),
        ({"max_speakers": "2"}, "max_speakers", "unsupported_value"),
        ({"min_speakers": "2"}, "min_speakers", "unsupported_value"),
        (
            {"model": DIARIZE, "multichannel": "true", "max_speakers": "2"},
            "max_speakers",
            "unsupported_value",
        ),
    ],
)
async def test_a_bad_count_is_a_400_naming_it(
    described: Harness, talk: Conversation, data: dict[str, Any], param: str, code: str
) -> None:
    response = await described.http.post(
        "/v1/audio/transcriptions", files={"file": ("talk.wav", talk.wav())}, data=data
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert error["code"] == code
    assert param in error["message"]
