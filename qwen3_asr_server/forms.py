"""Read and validate the multipart form of /v1/audio/transcriptions and /translations.

Every field is checked here, before any work is done, and a bad one is a 400 naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePath

from starlette.datastructures import FormData, UploadFile

from . import languages
from .errors import invalid
from .languages import Language

FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
AVAILABLE_FORMATS = ("json", "text")
GRANULARITIES = ("word", "segment")
# What OpenAI accepts; the extension only labels the audio for vLLM, which decodes by content.
AUDIO_EXTENSIONS = frozenset(
    {"flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "oga", "opus", "wav", "webm"}
)


@dataclass(frozen=True)
class AudioRequest:
    upload: UploadFile
    audio_format: str
    model: str | None
    language: Language | None
    prompt: str | None
    response_format: str
    temperature: float


def _text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be a text field, not a file.", name)
    return value.strip() or None


def _upload(form: FormData) -> UploadFile:
    value = form.get("file")
    if value is None:
        raise invalid("You must provide an audio 'file'.", "file", code="missing_file")
    if isinstance(value, str):
        raise invalid("'file' must be an uploaded file, not a text field.", "file")
    return value


def _audio_format(filename: str | None) -> str:
    extension = PurePath(filename or "").suffix.lstrip(".").lower()
    return extension if extension in AUDIO_EXTENSIONS else "wav"


def _temperature(form: FormData) -> float:
    raw = _text(form, "temperature")
    if raw is None:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise invalid(f"'temperature' must be a number from 0 to 1, got {raw!r}.", "temperature")
    return value


def _response_format(form: FormData) -> str:
    value = _text(form, "response_format") or "json"
    if value not in FORMATS:
        raise invalid(
            f"Invalid 'response_format' {value!r}: use one of {', '.join(FORMATS)}.",
            "response_format",
        )
    if value not in AVAILABLE_FORMATS:
        raise invalid(
            f"response_format {value!r} is not supported by this server yet: use "
            f"{' or '.join(AVAILABLE_FORMATS)}.",
            "response_format",
            code="unsupported_value",
        )
    return value


def _stream(form: FormData) -> None:
    value = (_text(form, "stream") or "false").lower()
    if value in ("true", "1"):
        raise invalid(
            "stream=true is not supported by this server yet.", "stream", code="unsupported_value"
        )
    if value not in ("false", "0"):
        raise invalid(f"'stream' must be true or false, got {value!r}.", "stream")


def _check_granularities(form: FormData) -> None:
    for value in form.getlist("timestamp_granularities[]"):
        if value not in GRANULARITIES:
            raise invalid(
                f"Invalid timestamp granularity {value!r}: use word or segment.",
                "timestamp_granularities",
            )


def _language(form: FormData) -> Language | None:
    value = _text(form, "language")
    if value is None:
        return None
    try:
        return languages.resolve(value)
    except ValueError as exc:
        raise invalid(str(exc), "language", code="unsupported_language") from exc


def parse(form: FormData, *, translation: bool) -> AudioRequest:
    """Validate the form; a translation takes no `language` (Qwen3-ASR detects it)."""
    upload = _upload(form)
    _stream(form)
    _check_granularities(form)
    return AudioRequest(
        upload=upload,
        audio_format=_audio_format(upload.filename),
        model=_text(form, "model"),
        language=None if translation else _language(form),
        prompt=_text(form, "prompt"),
        response_format=_response_format(form),
        temperature=_temperature(form),
    )
