"""The Realtime API's transcription protocol, client side: frames and session updates parsed.

Two dialects reach `/v1/realtime?intent=transcription`: the GA one (`session.update` with
`session.type == "transcription"`, answered by `session.created` / `session.updated`) and the
older beta one (`transcription_session.update`, answered by `transcription_session.*`). Both
configure the same `SessionConfig`; `beta` records which one the client speaks. Server events
are built in `server_events`. No I/O here.

Update semantics follow OpenAI's: a field left out of an update keeps its value, at every
level (OpenAI documents this for `noise_reduction.strength`); an explicit `null`
`turn_detection` turns VAD off; `null` elsewhere is the same as leaving the field out, except
`transcription`, which can't be turned off here and so goes back to its defaults.
Fields this server has no use for (`noise_reduction`, `create_response`, `idle_timeout_ms`,
...) are ignored, so that clients written for newer API versions still connect;
`transcription.delay` is checked and echoed but changes nothing (Qwen3-ASR has no such knob).
Beta field names inside a GA `session.update` are refused instead: ignoring them would drop
the client's language and VAD settings without a word.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypeVar

import orjson

from .. import languages
from ..languages import Language
from ..prompt import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from ..segmentation import (
    MAX_PREFIX_PADDING_MS,
    SILENCE_DURATION_MS,
    VAD_PREFIX_PADDING_MS,
    VAD_SILENCE_MS,
    VAD_THRESHOLD,
)

DEFAULT_SAMPLE_RATE = 24_000  # OpenAI's only rate; 16 kHz is this server's extension
SAMPLE_RATES = (16_000, 24_000)
LOGPROBS = "item.input_audio_transcription.logprobs"
# semantic_vad is served by plain VAD: a quarter of the longest wait OpenAI documents for
# each eagerness (8 s / 4 s / 2 s), so that "high" is server VAD's 500 ms default.
SEMANTIC_SILENCE_MS = {"low": 2_000, "medium": 1_000, "auto": 1_000, "high": 500}
DELAYS = ("minimal", "low", "medium", "high", "xhigh")

_N = TypeVar("_N", int, float)
_BETA_KEYS = ("input_audio_format", "input_audio_transcription", "turn_detection")


class EventError(Exception):
    """A client event the server refuses: answered with an `error` event; the session goes on."""

    def __init__(self, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.param = param


@dataclass(frozen=True)
class ServerVad:
    """Server VAD parameters, with OpenAI's defaults."""

    threshold: float = VAD_THRESHOLD
    prefix_padding_ms: int = VAD_PREFIX_PADDING_MS
    silence_duration_ms: int = VAD_SILENCE_MS


@dataclass(frozen=True)
class SessionConfig:
    """The effective configuration of one transcription session.

    Input audio is always 16-bit little-endian mono PCM, at `sample_rate`. `turn_detection`
    None means the client commits the buffer itself. `model` is checked by the session
    against the catalogue and echoed back; `language` and `languages` are kept as the
    client gave them (the session echoes them) and `forced` / `candidates` say what they
    mean together.
    """

    sample_rate: int = DEFAULT_SAMPLE_RATE
    language: Language | None = None
    languages: tuple[Language, ...] = ()
    prompt: str = ""
    keywords: tuple[str, ...] = ()
    model: str | None = None
    delay: str | None = None
    turn_detection: ServerVad | None = ServerVad()
    logprobs: bool = False
    beta: bool = False

    @property
    def forced(self) -> Language | None:
        """The language to transcribe in: `language`, or the only entry of `languages`."""
        if self.language is None and len(self.languages) == 1:
            return self.languages[0]
        return self.language

    @property
    def candidates(self) -> tuple[Language, ...]:
        return () if self.forced is not None else self.languages

    @property
    def transcription_path(self) -> str:
        """Where `transcription` lives in this dialect's session object."""
        return (
            "session.input_audio_transcription"
            if self.beta
            else ("session.audio.input.transcription")
        )


def parse_client_event(frame: str | bytes, max_bytes: int) -> dict[str, Any]:
    """One WebSocket frame as a client event: a JSON object with a string `type`."""
    if not isinstance(frame, str):
        raise EventError(
            "Binary frames are not part of the Realtime API: send each event as a JSON text "
            "frame (audio goes base64-encoded in input_audio_buffer.append).",
            "binary_frame_not_supported",
        )
    # characters <= UTF-8 bytes, so the encoding is only measured when it might matter
    if len(frame) > max_bytes or (not frame.isascii() and len(frame.encode()) > max_bytes):
        raise EventError(
            f"The event is larger than {max_bytes} bytes: send audio in smaller "
            "input_audio_buffer.append events.",
            "event_too_large",
        )
    try:
        event = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise EventError(f"The event is not valid JSON: {exc}.", "invalid_json") from None
    if not isinstance(event, dict):
        raise EventError("An event must be a JSON object.", "invalid_event")
    if not isinstance(event.get("type"), str):
        raise EventError("An event must have a string 'type'.", "invalid_event", "type")
    return event


def client_event_id(event: dict[str, Any]) -> str | None:
    """The client's own `event_id`, to be quoted back in an error about that event."""
    event_id = event.get("event_id")
    return event_id if isinstance(event_id, str) else None


def apply_update(config: SessionConfig, event: dict[str, Any]) -> SessionConfig:
    """The configuration after a `session.update` (GA) or `transcription_session.update`.

    The reply, and every event after it, speak the dialect of the update. Nothing changes
    unless the whole update is valid.
    """
    kind = event.get("type")
    if kind not in ("session.update", "transcription_session.update"):
        raise EventError(f"{kind!r} is not a session update.", "invalid_event", "type")
    if event.get("session") is None:
        raise EventError(
            "Missing required parameter: 'session'.", "missing_required_parameter", "session"
        )
    session = _object(event["session"], "session")
    if kind == "session.update":
        updated = replace(config, beta=False, **_ga_changes(config, session))
    else:
        updated = replace(config, beta=True, **_beta_changes(config, session))
    forced = updated.language
    if forced is not None and updated.languages and forced not in updated.languages:
        path = updated.transcription_path
        listed = ", ".join(lang.code for lang in updated.languages)
        raise EventError(
            f"Invalid value for '{path}.language': {forced.code!r} is not among "
            f"'{path}.languages' ({listed}).",
            "invalid_value",
            f"{path}.language",
        )
    return updated


def _ga_changes(config: SessionConfig, session: dict[str, Any]) -> dict[str, Any]:
    _choice(session.get("type", "transcription"), "session.type", ("transcription",))
    for key in _BETA_KEYS:
        if key in session:
            raise EventError(
                f"Unknown parameter: 'session.{key}'. That is the beta transcription_session "
                "shape; in session.update it lives under session.audio.input.",
                "unknown_parameter",
                f"session.{key}",
            )
    changes = _include(session)
    audio = _object(_or_empty(session.get("audio")), "session.audio")
    audio_input = _object(_or_empty(audio.get("input")), "session.audio.input")
    path = "session.audio.input"
    if audio_input.get("format") is not None:
        changes["sample_rate"] = _ga_format(audio_input["format"], f"{path}.format", config)
    if "transcription" in audio_input:
        changes |= _transcription(audio_input["transcription"], f"{path}.transcription")
    if "turn_detection" in audio_input:
        vad = _turn_detection(audio_input["turn_detection"], f"{path}.turn_detection", config)
        changes["turn_detection"] = vad
    return changes


def _beta_changes(config: SessionConfig, session: dict[str, Any]) -> dict[str, Any]:
    changes = _include(session)
    audio_format = session.get("input_audio_format")
    if audio_format is not None:
        _audio_type(audio_format, "session.input_audio_format", "pcm16")
        changes["sample_rate"] = DEFAULT_SAMPLE_RATE  # beta's pcm16 is 24 kHz by definition
    if "input_audio_transcription" in session:
        path = "session.input_audio_transcription"
        changes |= _transcription(session["input_audio_transcription"], path)
    if "turn_detection" in session:
        vad = _turn_detection(session["turn_detection"], "session.turn_detection", config)
        changes["turn_detection"] = vad
    return changes


def _include(session: dict[str, Any]) -> dict[str, Any]:
    if session.get("include") is None:
        return {}
    include = session["include"]
    if not isinstance(include, list):
        raise _wrong_type("session.include", "an array", include)
    for index, entry in enumerate(include):
        _choice(entry, f"session.include[{index}]", (LOGPROBS,))
    return {"logprobs": LOGPROBS in include}


def _ga_format(value: Any, path: str, config: SessionConfig) -> int:
    audio_format = _object(value, path)
    _audio_type(audio_format.get("type", "audio/pcm"), f"{path}.type", "audio/pcm")
    if audio_format.get("rate") is None:
        return config.sample_rate
    rate = _integer(audio_format["rate"], f"{path}.rate")
    if rate not in SAMPLE_RATES:
        raise EventError(
            f"Invalid value for '{path}.rate': {rate}. Supported sample rates: 24000, 16000.",
            "invalid_value",
            f"{path}.rate",
        )
    return rate


def _audio_type(value: Any, path: str, pcm: str) -> None:
    if value in ("audio/pcmu", "audio/pcma", "g711_ulaw", "g711_alaw"):
        raise EventError(
            f"G.711 audio ({value}) is not supported: send 16-bit little-endian mono PCM "
            f"({pcm!r}).",
            "invalid_value",
            path,
        )
    _choice(value, path, (pcm,))


def _transcription(value: Any, path: str) -> dict[str, Any]:
    if value is None:  # transcription can't be turned off: back to the defaults
        return {
            "language": None,
            "languages": (),
            "prompt": "",
            "keywords": (),
            "model": None,
            "delay": None,
        }
    transcription = _object(value, path)
    changes: dict[str, Any] = {}
    if transcription.get("delay") is not None:
        _choice(transcription["delay"], f"{path}.delay", DELAYS)
        changes["delay"] = transcription["delay"]
    if "keywords" in transcription:
        changes["keywords"] = _keywords(transcription["keywords"], f"{path}.keywords")
    if "languages" in transcription:
        changes["languages"] = _languages(transcription["languages"], f"{path}.languages")
    if "model" in transcription:
        changes["model"] = _string(transcription["model"], f"{path}.model")
    if "prompt" in transcription:
        changes["prompt"] = _string(transcription["prompt"], f"{path}.prompt") or ""
    if "language" in transcription:
        code = _string(transcription["language"], f"{path}.language")
        try:
            changes["language"] = languages.resolve(code) if code and code.strip() else None
        except ValueError as exc:
            raise EventError(str(exc), "invalid_value", f"{path}.language") from None
    return changes


def _strings(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type(path, "an array", value)
    return [_string(entry, f"{path}[{index}]") or "" for index, entry in enumerate(value)]


def _keywords(value: Any, path: str) -> tuple[str, ...]:
    keywords = tuple(keyword.strip() for keyword in _strings(value, path) if keyword.strip())
    if len(keywords) > MAX_KEYWORDS:
        raise EventError(
            f"Invalid value for '{path}': {len(keywords)} keywords, at most {MAX_KEYWORDS}.",
            "invalid_value",
            path,
        )
    if any(len(keyword) > MAX_KEYWORD_CHARS for keyword in keywords):
        raise EventError(
            f"Invalid value for '{path}': a keyword is longer than {MAX_KEYWORD_CHARS} "
            "characters; put longer context in the prompt.",
            "invalid_value",
            path,
        )
    return keywords


def _languages(value: Any, path: str) -> tuple[Language, ...]:
    try:
        found = (languages.resolve(code) for code in _strings(value, path) if code.strip())
        return tuple(dict.fromkeys(found))
    except ValueError as exc:
        raise EventError(str(exc), "invalid_value", path) from None


def _turn_detection(value: Any, path: str, config: SessionConfig) -> ServerVad | None:
    """Server VAD, or None for manual commits. semantic_vad becomes server VAD whose silence
    duration comes from `eagerness` (SEMANTIC_SILENCE_MS): there is no turn-end model here."""
    if value is None:
        return None
    turn_detection = _object(value, path)
    vad = config.turn_detection or ServerVad()
    kind = turn_detection.get("type") or "server_vad"
    _choice(kind, f"{path}.type", ("server_vad", "semantic_vad"))
    if kind == "semantic_vad":
        eagerness = turn_detection.get("eagerness") or "auto"
        _choice(eagerness, f"{path}.eagerness", tuple(SEMANTIC_SILENCE_MS))
        return replace(vad, silence_duration_ms=SEMANTIC_SILENCE_MS[eagerness])
    changes: dict[str, Any] = {}
    if turn_detection.get("threshold") is not None:
        threshold = _number(turn_detection["threshold"], f"{path}.threshold")
        changes["threshold"] = _bounded(threshold, 0.0, 1.0, f"{path}.threshold")
    if turn_detection.get("prefix_padding_ms") is not None:
        padding = _integer(turn_detection["prefix_padding_ms"], f"{path}.prefix_padding_ms")
        bounds = (0, MAX_PREFIX_PADDING_MS)
        changes["prefix_padding_ms"] = _bounded(padding, *bounds, f"{path}.prefix_padding_ms")
    if turn_detection.get("silence_duration_ms") is not None:
        silence = _integer(turn_detection["silence_duration_ms"], f"{path}.silence_duration_ms")
        bounds = SILENCE_DURATION_MS
        changes["silence_duration_ms"] = _bounded(silence, *bounds, f"{path}.silence_duration_ms")
    return replace(vad, **changes)


# --- validation helpers: each raises EventError naming the field's JSON path -----------------


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _wrong_type(path, "an object", value)
    return value


def _or_empty(value: Any) -> Any:
    return {} if value is None else value


def _string(value: Any, path: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _wrong_type(path, "a string", value)
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong_type(path, "a number", value)
    return float(value)


def _integer(value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(path, "an integer", value)
    return value


def _bounded(value: _N, low: _N, high: _N, path: str) -> _N:
    if not low <= value <= high:
        raise EventError(
            f"Invalid value for '{path}': {value}. It must be between {low} and {high}.",
            "invalid_value",
            path,
        )
    return value


def _choice(value: Any, path: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        expected = ", ".join(repr(choice) for choice in choices)
        raise EventError(
            f"Invalid value for '{path}': {value!r}. Supported values are: {expected}.",
            "invalid_value",
            path,
        )


def _wrong_type(path: str, expected: str, value: Any) -> EventError:
    got = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )
    return EventError(
        f"Invalid type for '{path}': expected {expected}, but got {got} instead.",
        "invalid_type",
        path,
    )
