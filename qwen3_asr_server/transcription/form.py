"""Read and validate the multipart form of /v1/audio/transcriptions and /translations.

Every field is checked here, before any work is done, and a bad one is a 400 naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from starlette.datastructures import FormData, UploadFile

from .. import languages
from ..errors import invalid
from ..languages import Language

FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
TIMED_FORMATS = frozenset({"srt", "verbose_json", "vtt"})
GRANULARITIES = ("word", "segment")


@dataclass(frozen=True)
class AudioRequest:
    upload: UploadFile
    model: str | None
    language: Language | None
    prompt: str | None
    response_format: str
    temperature: float
    stream: bool
    logprobs: bool  # include[]=logprobs
    granularities: frozenset[str]  # timestamp_granularities[]: word, segment (none: segment)


def _text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be a text field, not a file.", name)
    return value.strip() or None


def _texts(form: FormData, name: str, param: str) -> list[str]:
    """Every value of a repeated field (`include[]`), stripped as single fields are."""
    values = []
    for value in form.getlist(name):
        if not isinstance(value, str):
            raise invalid(f"'{name}' must be a text field, not a file.", param)
        values.append(value.strip())
    return values


def _upload(form: FormData) -> UploadFile:
    value = form.get("file")
    if value is None:
        raise invalid("You must provide an audio 'file'.", "file", code="missing_file")
    if isinstance(value, str):
        raise invalid("'file' must be an uploaded file, not a text field.", "file")
    return value


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
    if value == "diarized_json":
        raise invalid(
            "response_format 'diarized_json' is not supported: Qwen3-ASR does not tell "
            f"speakers apart. Use one of {', '.join(FORMATS)}.",
            "response_format",
            code="unsupported_value",
        )
    if value not in FORMATS:
        raise invalid(
            f"Invalid 'response_format' {value!r}: use one of {', '.join(FORMATS)}.",
            "response_format",
        )
    return value


def _stream(form: FormData, response_format: str, *, translation: bool) -> bool:
    value = (_text(form, "stream") or "false").lower()
    if value not in ("true", "1", "false", "0"):
        raise invalid(f"'stream' must be true or false, got {value!r}.", "stream")
    stream = value in ("true", "1")
    if stream and translation:
        raise invalid("Translations do not stream; send stream=false.", "stream")
    if stream and response_format != "json":
        raise invalid(
            f"stream=true cannot be combined with response_format {response_format!r}: "
            "streamed transcripts are transcript.text.delta events; use response_format json.",
            "stream",
            code="unsupported_value",
        )
    return stream


def _logprobs(form: FormData, response_format: str) -> bool:
    values = _texts(form, "include[]", "include")
    for value in values:
        if value != "logprobs":
            raise invalid(f"Invalid 'include[]' value {value!r}: use logprobs.", "include")
    if values and response_format != "json":
        raise invalid(
            f"include[]=logprobs needs response_format json, not {response_format!r}.",
            "include",
            code="unsupported_value",
        )
    return bool(values)


def _granularities(form: FormData, response_format: str) -> frozenset[str]:
    values = frozenset(_texts(form, "timestamp_granularities[]", "timestamp_granularities"))
    for value in values - set(GRANULARITIES):
        raise invalid(
            f"Invalid timestamp granularity {value!r}: use word or segment.",
            "timestamp_granularities",
        )
    if "word" in values and response_format != "verbose_json":
        raise invalid(
            f"Word timestamps come with response_format=verbose_json, not {response_format!r}.",
            "timestamp_granularities",
            code="unsupported_value",
        )
    return values


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
    response_format = _response_format(form)
    stream = _stream(form, response_format, translation=translation)
    granularities = _granularities(form, response_format)
    return AudioRequest(
        upload=upload,
        model=_text(form, "model"),
        language=None if translation else _language(form),
        prompt=_text(form, "prompt"),
        response_format=response_format,
        temperature=_temperature(form),
        stream=stream,
        logprobs=_logprobs(form, response_format),
        granularities=granularities,
    )
