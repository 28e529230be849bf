"""How /openapi.json describes the audio routes: the form `form` reads, the answers
`responses` writes. They read their form by hand, so FastAPI cannot see it; a client
generated from the schema should still know every field."""

from __future__ import annotations

from typing import Any

from ..prompt import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from .form import CHUNKING, FORMATS, GRANULARITIES
from .responses import CONTENT_TYPES

_TEXT = {"type": "string"}
_ERROR = {
    "description": 'OpenAI\'s error object: {"error": {"message", "type", "param", "code"}}',
    "content": {"application/json": {"schema": {"type": "object", "required": ["error"]}}},
}


def _fields(*, translation: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "file": {"type": "string", "format": "binary", "description": "Any audio or video."},
        "model": {**_TEXT, "description": "The served name, an alias, or an OpenAI model name."},
        "prompt": {**_TEXT, "description": "Context for the model: names, terms, a topic."},
        "keywords[]": {
            "type": "array",
            "items": {**_TEXT, "maxLength": MAX_KEYWORD_CHARS},
            "maxItems": MAX_KEYWORDS,
        },
        "response_format": {"type": "string", "enum": list(FORMATS), "default": "json"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 1, "default": 0},
        "timestamp_granularities[]": {
            "type": "array",
            "items": {"type": "string", "enum": list(GRANULARITIES)},
            "description": "word needs response_format verbose_json and an aligner.",
        },
        "include[]": {"type": "array", "items": {"type": "string", "enum": ["logprobs"]}},
        CHUNKING: {
            **_TEXT,
            "description": '"auto", or a server_vad object as JSON (or as '
            f"{CHUNKING}[type], [threshold], [prefix_padding_ms], [silence_duration_ms]).",
        },
    }
    if not translation:
        fields["language"] = {**_TEXT, "description": "ISO-639-1 code or English name."}
        fields["languages[]"] = {
            "type": "array",
            "items": _TEXT,
            "description": "The languages the audio may be in; one entry forces it.",
        }
        fields["stream"] = {
            "type": "boolean",
            "default": False,
            "description": "transcript.text.delta events, then transcript.text.done (SSE).",
        }
    return fields


def _answers(*, translation: bool) -> dict[str, Any]:
    content: dict[str, Any] = {
        "application/json": {
            "schema": {"type": "object", "required": ["text"], "properties": {"text": _TEXT}}
        },
        **{CONTENT_TYPES[name].split(";")[0]: {"schema": _TEXT} for name in ("text", "srt", "vtt")},
    }
    if not translation:
        content["text/event-stream"] = {"schema": _TEXT}
    return {
        "200": {
            "description": "The transcript, in the response_format asked for.",
            "content": content,
        },
        **dict.fromkeys(("400", "401", "413", "429", "503"), _ERROR),
    }


def operation(*, translation: bool) -> dict[str, Any]:
    """The OpenAPI operation of POST /v1/audio/transcriptions or /translations."""
    summary = "Transcribe audio" if not translation else "Transcribe audio (no translation)"
    return {
        "summary": summary,
        "operationId": "translations" if translation else "transcriptions",
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file"],
                        "properties": _fields(translation=translation),
                    }
                }
            },
        },
        "responses": _answers(translation=translation),
    }
