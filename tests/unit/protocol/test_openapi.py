"""The audio routes' schema is made from their request models and the format registry: every
field a model takes is published, and nothing else; and their answers' models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic.json_schema import SkipJsonSchema

from qwen3_asr_server.entrypoints.audio import openapi
from qwen3_asr_server.entrypoints.audio.protocol import (
    AudioRequest,
    TranscriptionRequest,
    TranslationRequest,
)
from qwen3_asr_server.transcription.formats import FORMATS, JSON


def _published(model: type[AudioRequest]) -> set[str]:
    """The fields the model takes that are not kept out of the schema (refused ones)."""
    return {
        name
        for name, field in model.model_fields.items()
        if not any(isinstance(each, SkipJsonSchema) for each in field.metadata)
    }


def test_every_field_of_each_model_and_only_those() -> None:
    for model in (TranscriptionRequest, TranslationRequest):
        fields = openapi.fields(model)
        assert {name.removesuffix("[]") for name in fields} == _published(model)
        for name, field in fields.items():
            assert name.endswith("[]") == (field.get("type") == "array"), name
            assert "title" not in field
            assert field.get("type") != "null"
    transcription = set(openapi.fields(TranscriptionRequest))
    translation = set(openapi.fields(TranslationRequest))
    assert transcription - translation == {"language", "languages[]", "stream"}


def test_values_the_models_take_are_the_ones_published() -> None:
    fields = openapi.fields(TranscriptionRequest)
    assert fields["response_format"]["enum"] == list(FORMATS)
    assert fields["response_format"]["default"] == "json"
    assert (fields["temperature"]["minimum"], fields["temperature"]["maximum"]) == (0, 1)
    assert fields["timestamp_granularities[]"]["items"]["enum"] == ["word", "segment"]
    assert fields["include[]"]["items"]["enum"] == ["logprobs"]
    assert fields["file"] == {
        "type": "string",
        "format": "binary",
        "description": "Any audio or video.",
    }
    assert "[threshold]" in fields["chunking_strategy"]["description"]


def test_the_answers_are_the_registrys_content_types() -> None:
    content = openapi.operation(TranscriptionRequest)["responses"]["200"]["content"]
    kinds = {entry.content_type.split(";")[0] for entry in FORMATS.values()}
    assert set(content) == kinds | {"text/event-stream"}
    translated = openapi.operation(TranslationRequest)["responses"]["200"]["content"]
    assert set(translated) == kinds  # translations do not stream


def _refs(schema: Any) -> Iterator[str]:
    """The names of every component `schema` refers to, however deep."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            yield schema["$ref"].removeprefix("#/components/schemas/")
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def test_each_route_publishes_its_answers_and_openais_error() -> None:
    routes = {
        TranscriptionRequest: ["Transcription", "TranscriptionVerbose", "TranscriptionDiarized"],
        TranslationRequest: ["Translation", "TranslationVerbose"],
    }
    for model, answers in routes.items():
        published = openapi.operation(model)["responses"]
        content = published.pop("200")["content"]
        assert list(_refs(content[JSON])) == answers
        for kind, entry in content.items():
            if kind not in (JSON, "text/event-stream"):
                assert entry["schema"] == {"type": "string"}, kind
        assert {"400", "401", "404", "413", "429", "500", "503"} <= set(published)
        for status, answer in published.items():
            assert list(_refs(answer)) == ["ErrorResponse"], status
    events = openapi.operation(TranscriptionRequest)["responses"]["200"]["content"]
    assert list(_refs(events["text/event-stream"])) == [
        "TranscriptionTextDeltaEvent",
        "TranscriptionDiarizedSegment",
        "TranscriptionTextDoneEvent",
        "ErrorResponse",
    ]


def test_every_schema_referred_to_is_published() -> None:
    schemas = openapi.components()
    operations = [openapi.operation(model) for model in (TranscriptionRequest, TranslationRequest)]
    assert set(_refs([operations, schemas])) <= set(schemas)


def test_a_field_sometimes_left_out_is_optional_and_never_null() -> None:
    schemas = openapi.components()
    transcription = schemas["Transcription"]
    assert transcription["required"] == ["text", "languages", "usage"]
    assert transcription["additionalProperties"] is False
    assert "default" not in transcription["properties"]["logprobs"]
    assert schemas["Translation"]["required"] == ["text", "languages", "usage", "_note"]
    assert "speaker" not in schemas["TranscriptionSegment"]["required"]
    nullable = [name for name in schemas if '"null"' in json.dumps(schemas[name])]
    assert nullable == ["Error"]  # `param` and `code`, as OpenAI's
