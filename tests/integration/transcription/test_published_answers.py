"""Every answer of the audio routes is one that /openapi.json publishes for it: each
response_format (with words, with speakers), the stream's events, an error, on both routes. The
openai SDK's own types read each JSON answer as well.

The stand-in vLLM names each piece's length, the stand-in aligner times its words, and the
shipped diarizer labels the speakers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import jsonschema
import pytest
from openai import BaseModel as OpenAIModel
from openai.types.audio import (
    Transcription,
    TranscriptionDiarized,
    TranscriptionTextDeltaEvent,
    TranscriptionTextDoneEvent,
    TranscriptionTextSegmentEvent,
    TranscriptionVerbose,
    Translation,
    TranslationVerbose,
)

from qwen3_asr_server.model.catalog import DIARIZE
from tests.fixtures.containers import encode
from tests.fixtures.harness import Harness, aligned_app
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken
from tests.fixtures.standin_aligner import StandInAligner

TRANSCRIPTIONS = "/v1/audio/transcriptions"
TRANSLATIONS = "/v1/audio/translations"
CLIP = encode(spoken([(0.5, False), (2.0, True), (1.0, False), (2.5, True)]), 16000, "wav")
WORDS = {"timestamp_granularities[]": ["word", "segment"]}
# the form of each answer asked for, and the openai type that reads it (None: text)
ASKED: list[tuple[str, dict[str, Any], type[OpenAIModel] | None]] = [
    (TRANSCRIPTIONS, {"model": "whisper-1"}, Transcription),
    (TRANSCRIPTIONS, {"model": "gpt-4o-transcribe", "include[]": "logprobs"}, Transcription),
    (TRANSCRIPTIONS, {"response_format": "text"}, None),
    (TRANSCRIPTIONS, {"response_format": "verbose_json"}, TranscriptionVerbose),
    (TRANSCRIPTIONS, {"response_format": "verbose_json", **WORDS}, TranscriptionVerbose),
    (
        TRANSCRIPTIONS,
        {"model": DIARIZE, "response_format": "verbose_json", **WORDS},
        TranscriptionVerbose,
    ),
    (TRANSCRIPTIONS, {"model": DIARIZE, "response_format": "diarized_json"}, TranscriptionDiarized),
    (TRANSCRIPTIONS, {"response_format": "srt"}, None),
    (TRANSCRIPTIONS, {"model": DIARIZE, "response_format": "vtt"}, None),
    (TRANSLATIONS, {}, Translation),
    (TRANSLATIONS, {"response_format": "verbose_json", **WORDS}, TranslationVerbose),
    (TRANSLATIONS, {"response_format": "text"}, None),
    (TRANSLATIONS, {"response_format": "srt"}, None),
]
EVENTS: dict[str, type[OpenAIModel]] = {
    "transcript.text.delta": TranscriptionTextDeltaEvent,
    "transcript.text.segment": TranscriptionTextSegmentEvent,
    "transcript.text.done": TranscriptionTextDoneEvent,
}


@pytest.fixture(scope="module")
def aligner_url() -> Iterator[str]:
    server = ThreadedServer(StandInAligner("qwen3-forced-aligner").app).start()
    yield server.url
    server.stop()


@pytest.fixture
async def harness(aligner_url: str) -> AsyncIterator[Harness]:
    async with aligned_app(aligner_url) as harness:
        yield harness


async def _published(harness: Harness, path: str, status: str, kind: str) -> dict[str, Any]:
    """The schema /openapi.json publishes for an answer, with the components it refers to."""
    document = (await harness.http.get("/openapi.json")).json()
    answer = document["paths"][path]["post"]["responses"][status]
    return {**answer["content"][kind]["schema"], "components": document["components"]}


def _properties(schema: dict[str, Any], event: str) -> list[str]:
    """The properties, in order, of the event model published for the event type `event`."""
    for ref in schema["oneOf"]:
        model = schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
        if model["properties"].get("type", {}).get("const") == event:
            return list(model["properties"])
    raise AssertionError(f"no published event is {event}")


def _valid(value: Any, schema: dict[str, Any]) -> None:
    jsonschema.validate(value, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(("path", "data", "sdk_type"), ASKED)
async def test_each_answer_is_one_published(
    harness: Harness, path: str, data: dict[str, Any], sdk_type: type[OpenAIModel] | None
) -> None:
    response = await harness.http.post(path, files={"file": ("a.wav", CLIP)}, data=data)
    assert response.status_code == 200, response.text
    kind = response.headers["content-type"].split(";")[0]
    schema = await _published(harness, path, "200", kind)
    if sdk_type is None:
        _valid(response.text, schema)
        return
    body = response.json()
    _valid(body, schema)
    sdk_type.model_validate(body)
    if "words" in data.get("timestamp_granularities[]", ()):
        assert body["words"]
    if data.get("model") == DIARIZE:
        assert all("speaker" in each for each in body["segments"])


@pytest.mark.parametrize(
    "data",
    [
        {"include[]": "logprobs"},
        {"model": DIARIZE, "response_format": "diarized_json"},
    ],
)
async def test_each_streamed_event_is_one_published(harness: Harness, data: dict[str, Any]) -> None:
    response = await harness.http.post(
        TRANSCRIPTIONS, files={"file": ("a.wav", CLIP)}, data={"stream": "true", **data}
    )
    assert response.status_code == 200, response.text
    schema = await _published(harness, TRANSCRIPTIONS, "200", "text/event-stream")
    events = [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]
    for event in events:
        _valid(event, schema)
        sdk_type = EVENTS[event["type"]]
        sdk_type.model_validate(event)
        published = _properties(schema, event["type"])
        assert list(event) == [key for key in published if key in event]  # as ever, in order
    kinds = [event["type"] for event in events]
    assert kinds[-1] == "transcript.text.done"
    assert ("transcript.text.segment" in kinds) == ("model" in data)


@pytest.mark.parametrize("path", [TRANSCRIPTIONS, TRANSLATIONS])
async def test_an_error_is_the_one_published(harness: Harness, path: str) -> None:
    response = await harness.http.post(
        path, files={"file": ("a.wav", CLIP)}, data={"response_format": "nope"}
    )
    assert response.status_code == 400
    _valid(response.json(), await _published(harness, path, "400", "application/json"))
