"""Read and validate the multipart form of /v1/audio/transcriptions and /translations.

Every field is checked here, before any work is done, and a bad one is a 400 naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.datastructures import FormData, UploadFile

from .. import languages, segmentation
from ..errors import invalid
from ..languages import Language
from ..prompt import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from ..segmentation import Chunking

FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
TIMED_FORMATS = frozenset({"srt", "verbose_json", "vtt"})
GRANULARITIES = ("word", "segment")
CHUNKING = "chunking_strategy"
_VAD_KEYS = ("type", "threshold", "prefix_padding_ms", "silence_duration_ms")


@dataclass(frozen=True)
class AudioRequest:
    upload: UploadFile
    model: str | None
    language: Language | None  # forced: `language`, or the one entry of `languages[]`
    candidates: tuple[Language, ...]  # `languages[]` with several entries
    prompt: str | None
    keywords: tuple[str, ...]
    chunking: Chunking | None  # chunking_strategy; None: this server's own plan
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


def _texts(form: FormData, param: str) -> list[str]:
    """Every value of a repeated field, sent as `include[]` (OpenAI's SDKs) or `include`,
    stripped as single fields are."""
    values = []
    for name in (f"{param}[]", param):
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
    values = _texts(form, "include")
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
    values = frozenset(_texts(form, "timestamp_granularities"))
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
    return _resolve(value, "language")


def _resolve(value: str, param: str) -> Language:
    try:
        return languages.resolve(value)
    except ValueError as exc:
        raise invalid(str(exc), param, code="unsupported_language") from exc


def _languages(form: FormData) -> tuple[Language | None, tuple[Language, ...]]:
    """The forced language and the candidates: `languages[]` with one entry forces it as
    `language` does; with several, they are the candidates. `language` beside them must be
    one of them, and is then forced."""
    forced = _language(form)
    listed = tuple(dict.fromkeys(_resolve(v, "languages") for v in _texts(form, "languages") if v))
    if forced is not None and listed and forced not in listed:
        raise invalid(
            f"'language' {forced.code!r} is not among 'languages' "
            f"({', '.join(language.code for language in listed)}): send one or the other.",
            "language",
        )
    if forced is None and len(listed) == 1:
        forced = listed[0]
    return forced, () if forced is not None else listed


def _keywords(form: FormData) -> tuple[str, ...]:
    keywords = tuple(keyword for keyword in _texts(form, "keywords") if keyword)
    if len(keywords) > MAX_KEYWORDS:
        raise invalid(f"Too many 'keywords': {len(keywords)}, at most {MAX_KEYWORDS}.", "keywords")
    for keyword in keywords:
        if len(keyword) > MAX_KEYWORD_CHARS:
            raise invalid(
                f"A keyword is {len(keyword)} characters long, more than {MAX_KEYWORD_CHARS}: "
                "keywords are words or short phrases; put longer context in 'prompt'.",
                "keywords",
            )
    return keywords


def _chunking(form: FormData) -> Chunking | None:
    """`chunking_strategy`: "auto", or server_vad's fields as `chunking_strategy[threshold]`
    (OpenAI's SDKs) or as one JSON object."""
    fields = {
        key[len(CHUNKING) + 1 : -1]: value
        for key, value in form.multi_items()
        if key.startswith(f"{CHUNKING}[") and key.endswith("]")
    }
    raw = _text(form, CHUNKING)
    if raw is not None and fields:
        raise invalid(f"Send '{CHUNKING}' as one field or as its parts, not both.", CHUNKING)
    if raw is None and not fields:
        return None
    if raw == "auto":
        return Chunking()
    if raw is not None:
        try:
            parsed: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            raise invalid(
                f"Invalid '{CHUNKING}' {raw!r}: use \"auto\" or a server_vad object.", CHUNKING
            )
        fields = parsed
    return _server_vad(fields)


def _server_vad(fields: dict[str, Any]) -> Chunking:
    for key in fields:
        if key not in _VAD_KEYS:
            raise invalid(
                f"Unknown parameter '{CHUNKING}.{key}': server_vad takes {', '.join(_VAD_KEYS)}.",
                f"{CHUNKING}.{key}",
            )
    if fields.get("type") != "server_vad":
        raise invalid(
            f"Invalid '{CHUNKING}.type' {fields.get('type')!r}: use server_vad (or send "
            f"{CHUNKING}=auto).",
            f"{CHUNKING}.type",
        )
    threshold = _number(fields, "threshold", segmentation.VAD_THRESHOLD, (0.0, 1.0))
    padding = _number(
        fields,
        "prefix_padding_ms",
        segmentation.VAD_PREFIX_PADDING_MS,
        (0, segmentation.MAX_PREFIX_PADDING_MS),
    )
    silence = _number(
        fields, "silence_duration_ms", segmentation.VAD_SILENCE_MS, segmentation.SILENCE_DURATION_MS
    )
    return Chunking.server_vad(threshold, int(padding), int(silence))


def _number(fields: dict[str, Any], key: str, default: float, bounds: tuple[float, float]) -> float:
    """A server_vad number, from a form field (text) or JSON; whole where the default is."""
    value = fields.get(key)
    if value is None:
        return default
    param = f"{CHUNKING}.{key}"
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    low, high = bounds
    integral = isinstance(default, int)
    if not low <= number <= high or (integral and not number.is_integer()):
        kind = "an integer" if integral else "a number"
        raise invalid(f"'{param}' must be {kind} from {low} to {high}, got {value!r}.", param)
    return number


def _no_diarization(form: FormData) -> None:
    for param in ("known_speaker_names", "known_speaker_references"):
        if form.getlist(f"{param}[]") or form.getlist(param):
            raise invalid(
                f"'{param}' is for diarization, which this server does not do: Qwen3-ASR does "
                "not tell speakers apart.",
                param,
                code="unsupported_value",
            )


def parse(form: FormData, *, translation: bool) -> AudioRequest:
    """Validate the form; a translation takes no `language` (Qwen3-ASR detects it)."""
    upload = _upload(form)
    _no_diarization(form)
    response_format = _response_format(form)
    stream = _stream(form, response_format, translation=translation)
    granularities = _granularities(form, response_format)
    language, candidates = (None, ()) if translation else _languages(form)
    return AudioRequest(
        upload=upload,
        model=_text(form, "model"),
        language=language,
        candidates=candidates,
        prompt=_text(form, "prompt"),
        keywords=_keywords(form),
        chunking=_chunking(form),
        response_format=response_format,
        temperature=_temperature(form),
        stream=stream,
        logprobs=_logprobs(form, response_format),
        granularities=granularities,
    )
