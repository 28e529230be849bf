"""How /openapi.json describes the audio routes: made from their request models (`form`) and
the format registry, since they read their form by hand and FastAPI cannot see it. A client
generated from the schema knows every field the models take."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from ...transcription import responses
from ...transcription.formats import FORMATS, JSON
from ...transcription.request import Format
from ...transcription.responses import Answer
from .protocol import AudioRequest, TranscriptionRequest, TranslationRequest

REF = "#/components/schemas/{model}"
_ANSWERS: dict[type[AudioRequest], tuple[type[Answer], ...]] = {
    TranscriptionRequest: responses.TRANSCRIPTIONS,
    TranslationRequest: responses.TRANSLATIONS,
}
# Each status the audio routes answer with OpenAI's error object, and why
_ERRORS = {
    "400": "A field is missing or wrong, two cannot go together, or the audio cannot be read.",
    "401": "No API key, or not the one the server takes.",
    "404": "The model is not served.",
    "413": "The upload is larger than the server takes (--max-upload-mb).",
    "429": "Too many requests wait already, or none could start in time; retry later.",
    "500": "The server failed.",
    "502": "A backend failed.",
    "503": "The backend is loading or restarting; retry later.",
    "504": "A backend did not answer in time.",
}
_TEXT = {"type": "string"}


def _field(schema: dict[str, Any]) -> dict[str, Any]:
    """A property as a form field: a value or none, so neither `null` nor a title."""
    field = {key: value for key, value in schema.items() if key not in ("title", "anyOf")}
    if field.get("default", 0) is None:
        del field["default"]
    options = [each for each in schema.get("anyOf", ()) if each.get("type") != "null"]
    if len(options) == 1:
        return {**options[0], **field}
    return {**field, "anyOf": options} if options else field


def fields(model: type[BaseModel]) -> dict[str, Any]:
    """The form's fields, list fields spelled as OpenAI's SDKs send them (`keywords[]`)."""
    properties = model.model_json_schema(mode="validation")["properties"]
    found = {}
    for name, schema in properties.items():
        field = _field(schema)
        found[f"{name}[]" if field.get("type") == "array" else name] = field
    return found


def _ref(model: type[Answer]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def components() -> dict[str, Any]:
    """The answers' models, for `components/schemas`."""
    return schemas((*responses.TRANSCRIPTIONS, *responses.TRANSLATIONS, *responses.STREAM_EVENTS))


def schemas(models: tuple[type[Answer], ...]) -> dict[str, Any]:
    """These answers' models (and those they hold), for `components/schemas`."""
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (model, "serialization") for model in models
    ]
    _, schemas = models_json_schema(pairs, ref_template=REF)
    found: dict[str, Any] = schemas["$defs"]
    return found


def _answers(model: type[AudioRequest]) -> dict[str, Any]:
    """Per format, its content type and what it holds: for the JSON formats, exactly one of
    the route's models; while streaming, one of the events on each `data:` line."""
    content = formats(FORMATS.values(), _ANSWERS[model])
    if "stream" in model.model_json_schema()["properties"]:
        events = [_ref(each) for each in responses.STREAM_EVENTS]
        content["text/event-stream"] = {"schema": {"oneOf": events}}
    return answers(
        content,
        "The transcript, in the response_format asked for; with stream=true, server-sent "
        "events, each `data:` line one of the events.",
    )


def formats(entries: Iterable[Format], models: tuple[type[Answer], ...]) -> dict[str, Any]:
    """Each format's content type, and what it holds: one of `models` for a JSON one."""
    content: dict[str, Any] = {}
    for entry in entries:
        kind = entry.content_type.split(";")[0]
        schema = {"oneOf": [_ref(each) for each in models]} if kind == JSON else _TEXT
        content[kind] = {"schema": schema}
    return content


def answers(content: dict[str, Any], description: str) -> dict[str, Any]:
    """An audio route's answers: what it says (`content`, by content type), or an error."""
    error = {"application/json": {"schema": _ref(responses.ErrorResponse)}}
    return {
        "200": {"description": description, "content": content},
        **{
            status: {"description": description, "content": error}
            for status, description in _ERRORS.items()
        },
    }


def operation(model: type[AudioRequest]) -> dict[str, Any]:
    """The OpenAPI operation of POST /v1/audio/transcriptions or /translations."""
    translation = model is TranslationRequest
    body = {"type": "object", "required": ["file"], "properties": fields(model)}
    return {
        "summary": "Transcribe audio (no translation)" if translation else "Transcribe audio",
        "operationId": "translations" if translation else "transcriptions",
        "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": body}}},
        "responses": _answers(model),
    }
