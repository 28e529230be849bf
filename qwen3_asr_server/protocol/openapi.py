"""How /openapi.json describes the audio routes: made from their request models (`form`) and
the format registry, since they read their form by hand and FastAPI cannot see it. A client
generated from the schema knows every field the models take."""

from __future__ import annotations

from typing import Any

from ..transcription.formats import FORMATS, JSON
from .form import AudioRequest, TranslationRequest

_ERROR = {
    "description": 'OpenAI\'s error object: {"error": {"message", "type", "param", "code"}}',
    "content": {"application/json": {"schema": {"type": "object", "required": ["error"]}}},
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


def fields(model: type[AudioRequest]) -> dict[str, Any]:
    """The form's fields, list fields spelled as OpenAI's SDKs send them (`keywords[]`)."""
    properties = model.model_json_schema(mode="validation")["properties"]
    found = {}
    for name, schema in properties.items():
        field = _field(schema)
        found[f"{name}[]" if field.get("type") == "array" else name] = field
    return found


def _answers(model: type[AudioRequest]) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for entry in FORMATS.values():
        kind = entry.content_type.split(";")[0]
        if kind == JSON:
            text = {"text": _TEXT}
            content[kind] = {"schema": {"type": "object", "required": ["text"], "properties": text}}
        else:
            content[kind] = {"schema": _TEXT}
    if "stream" in model.model_json_schema()["properties"]:
        content["text/event-stream"] = {"schema": _TEXT}
    return {
        "200": {
            "description": "The transcript, in the response_format asked for.",
            "content": content,
        },
        **dict.fromkeys(("400", "401", "413", "429", "503"), _ERROR),
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
