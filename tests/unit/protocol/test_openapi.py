"""The audio routes' schema is made from their request models and the format registry: every
field a model takes is published, and nothing else."""

from __future__ import annotations

from pydantic.json_schema import SkipJsonSchema

from qwen3_asr_server.protocol import openapi
from qwen3_asr_server.protocol.form import AudioRequest, TranscriptionRequest, TranslationRequest
from qwen3_asr_server.transcription.formats import FORMATS


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
