"""Who said what (`gpt-4o-transcribe-diarize`), through the HTTP API as the openai SDK and a
raw client use it: real voices (flite's CMU ARCTIC speakers) with the truth of who spoke when,
the real diarizer, the stand-in for vLLM (which names each piece's length)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from openai.types.audio import TranscriptionDiarized, TranscriptionTextSegmentEvent

from qwen3_asr_server.model.catalog import DIARIZE
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.containers import encode
from tests.fixtures.conversations import (
    RATE,
    Conversation,
    check_speakers,
    conversation,
    spoken,
)
from tests.fixtures.harness import MODEL, Harness, aligned_app, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_aligner import StandInAligner


@pytest.fixture(scope="module")
def voices(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("voices")


@pytest.fixture(scope="module")
def talk(voices: Path) -> Conversation:
    """Three speakers, 12 turns, ~45 s: longer than the model's window."""
    return conversation(3, 12, voices, seed=3)


def data_url(samples: Any, container: str) -> str:
    data = encode(samples.astype("float32") / 32768, RATE, container)
    return f"data:audio/{container};base64,{base64.b64encode(data).decode()}"


async def test_diarized_json_through_the_sdk(described: Harness, talk: Conversation) -> None:
    answer = await described.sdk.audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="diarized_json"
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert answer.task == "transcribe"
    assert answer.duration == pytest.approx(len(talk.samples) / RATE, abs=0.01)
    assert len(answer.segments) >= len(talk.truth) - 2  # turns apart, but for overlaps
    check_speakers(talk, answer.segments, {})
    assert [segment.id for segment in answer.segments] == [
        f"seg_{index}" for index in range(len(answer.segments))
    ]
    assert answer.text == " ".join(segment.text for segment in answer.segments)
    assert all(segment.end - segment.start <= 30 for segment in answer.segments)
    assert answer.usage is not None
    assert answer.usage.type == "tokens"


async def test_json_and_text_answer_the_text_as_usual(
    described: Harness, talk: Conversation
) -> None:
    """diarized_json's text (the pieces are cut where the speakers change), in the fields the
    served model's json has: no segments, no speakers."""
    diarized = await described.sdk.audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="diarized_json"
    )
    plain = await described.sdk.audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="json"
    )
    assert plain.text == diarized.text
    text = await described.sdk.audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="text"
    )
    assert text.strip() == diarized.text
    fields = []
    for model in (DIARIZE, MODEL):
        response = await described.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("talk.wav", talk.wav())},
            data={"model": model, "response_format": "json"},
        )
        assert response.status_code == 200
        fields.append(set(response.json()))
    assert fields[0] == fields[1]  # no segments, no speakers


async def test_known_speakers_are_named(
    described: Harness, talk: Conversation, voices: Path
) -> None:
    """References of two of the voices, saying other things, in other formats."""
    agent = spoken("awb", "Thank you for calling, how can I help you today?", voices)
    caller = spoken("slt", "Hi, I have a question about my last invoice, please.", voices)
    answer = await described.sdk.audio.transcriptions.create(
        model=DIARIZE,
        file=("talk.wav", talk.wav()),
        response_format="diarized_json",
        extra_body={
            "known_speaker_names": ["agent", "caller"],
            "known_speaker_references": [data_url(agent, "mp3"), data_url(caller, "ogg")],
        },
    )
    assert isinstance(answer, TranscriptionDiarized)
    check_speakers(talk, answer.segments, {"awb": "agent", "slt": "caller"})


async def test_a_stream_sends_segments_with_their_speakers(
    described: Harness, talk: Conversation
) -> None:
    whole = await described.sdk.audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="diarized_json"
    )
    events = []
    async with described.http.stream(
        "POST",
        "/v1/audio/transcriptions",
        files={"file": ("talk.wav", talk.wav())},
        data={"model": DIARIZE, "response_format": "diarized_json", "stream": "true"},
    ) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(orjson.loads(line[6:]))
    segments = [
        TranscriptionTextSegmentEvent.model_validate(event)
        for event in events
        if event["type"] == "transcript.text.segment"
    ]
    assert [s.model_dump() for s in segments] == [
        {**s.model_dump(), "type": "transcript.text.segment"} for s in whole.segments
    ]
    said: dict[str, str] = {}
    for event in events:
        if event["type"] == "transcript.text.delta":
            said[event["segment_id"]] = said.get(event["segment_id"], "") + event["delta"]
    assert {key: text.strip() for key, text in said.items()} == {s.id: s.text for s in segments}
    assert events[-1]["type"] == "transcript.text.done"
    assert events[-1]["text"] == whole.text
    assert events[-1]["usage"]["type"] == "tokens"


async def test_subtitles_and_verbose_json_say_who_speaks(
    described: Harness, talk: Conversation
) -> None:
    verbose = await described.sdk.audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="verbose_json"
    )
    assert verbose.segments
    check_speakers(talk, verbose.segments, {})  # type: ignore[arg-type]
    for container, marker in (("vtt", "<v {}>"), ("srt", "[{}] ")):
        response = await described.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("talk.wav", talk.wav())},
            data={"model": DIARIZE, "response_format": container},
        )
        assert response.status_code == 200
        first = verbose.segments[0]
        assert marker.format(getattr(first, "speaker")) + first.text in response.text  # noqa: B009
        assert response.text.count(marker.format("B")) >= 1


async def test_the_diarizing_model_is_listed(described: Harness) -> None:
    listed = [model.id async for model in described.sdk.models.list()]
    assert DIARIZE in listed
    card = await described.sdk.models.retrieve(DIARIZE)
    assert card.id == DIARIZE


SHORT = "data:audio/wav;base64," + base64.b64encode(b"RIFF").decode()


@pytest.mark.parametrize(
    ("data", "param"),
    [
        ({"response_format": "diarized_json"}, "response_format"),
        ({"known_speaker_names[]": "agent"}, "known_speaker_names"),
        ({"model": DIARIZE, "known_speaker_names[]": "agent"}, "known_speaker_references"),
        (
            {"model": DIARIZE, "known_speaker_names[]": ["a", "b", "c", "d", "e"]},
            "known_speaker_names",
        ),
        (
            {"model": DIARIZE, "known_speaker_names[]": "a", "known_speaker_references[]": "x"},
            "known_speaker_references",
        ),
        (
            {"model": DIARIZE, "known_speaker_names[]": "a", "known_speaker_references[]": SHORT},
            "known_speaker_references",
        ),
    ],
)
async def test_bad_diarization_fields_are_a_400_naming_them(
    described: Harness, talk: Conversation, data: dict[str, Any], param: str
) -> None:
    response = await described.http.post(
        "/v1/audio/transcriptions", files={"file": ("talk.wav", talk.wav())}, data=data
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


async def test_a_reference_that_is_not_base64_is_a_400_in_openais_shape(
    described: Harness, talk: Conversation
) -> None:
    response = await described.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("talk.wav", talk.wav())},
        data={
            "model": DIARIZE,
            "known_speaker_names[]": "agent",
            "known_speaker_references[]": "data:audio/wav;base64,not*base64!",
        },
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "known_speaker_references[0] is not valid base64.",
            "type": "invalid_request_error",
            "param": "known_speaker_references",
            "code": "invalid_value",
        }
    }


@pytest.mark.parametrize(("seconds", "reason"), [(1.0, "lasts 1.0 s"), (12.0, "lasts over 10 s")])
async def test_a_reference_of_the_wrong_length_is_a_400(
    described: Harness, talk: Conversation, seconds: float, reason: str
) -> None:
    clip = talk.samples[: round(seconds * RATE)]
    response = await described.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("talk.wav", talk.wav())},
        data={
            "model": DIARIZE,
            "known_speaker_names[]": "agent",
            "known_speaker_references[]": data_url(clip, "wav"),
        },
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "known_speaker_references"
    assert reason in error["message"]


async def test_without_a_diarizer_the_model_is_refused(
    describing: tuple[StandIn, ThreadedServer], talk: Conversation
) -> None:
    fake, running = describing
    settings = Settings(model=MODEL, backend_url=running.url, diarizer="none")
    async for described in start_harness(settings, fake):
        with pytest.raises(openai.BadRequestError) as caught:
            await described.sdk.audio.transcriptions.create(
                model=DIARIZE, file=("talk.wav", talk.wav()), response_format="diarized_json"
            )
        assert "--diarizer none" in str(caught.value)
        assert DIARIZE not in [model.id async for model in described.sdk.models.list()]


async def test_prompt_and_keywords_reach_every_piece(
    described: Harness, talk: Conversation
) -> None:
    assert described.standin is not None
    described.standin.requests.clear()
    answer = await described.sdk.audio.transcriptions.create(
        model=DIARIZE,
        file=("talk.wav", talk.wav()),
        response_format="diarized_json",
        prompt="A release meeting.",
        extra_body={"keywords": ["Thursday"]},
    )
    assert isinstance(answer, TranscriptionDiarized)
    systems = [request["messages"][0] for request in described.standin.requests]
    assert len(systems) == len(answer.segments)
    assert all(turn["role"] == "system" for turn in systems)
    assert all("A release meeting." in turn["content"] for turn in systems)
    assert all("Thursday" in turn["content"] for turn in systems)


async def test_aligned_words_carry_their_speaker(talk: Conversation) -> None:
    aligner = StandInAligner("qwen3-forced-aligner")
    running = ThreadedServer(aligner.app).start()
    try:
        async with aligned_app(running.url) as described:
            response = await described.http.post(
                "/v1/audio/transcriptions",
                files={"file": ("talk.wav", talk.wav())},
                data={
                    "model": DIARIZE,
                    "response_format": "verbose_json",
                    "timestamp_granularities[]": ["word", "segment"],
                },
            )
    finally:
        running.stop()
    assert response.status_code == 200
    body = response.json()
    # each segment is "Heard N s.": three words, in the segments' order
    speakers = [segment["speaker"] for segment in body["segments"] for _ in range(3)]
    assert [word["speaker"] for word in body["words"]] == speakers
    assert len(set(speakers)) == 3
