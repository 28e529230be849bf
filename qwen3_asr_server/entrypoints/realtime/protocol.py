"""The Realtime API's transcription session configuration, in both of its spellings.

Two dialects reach `/v1/realtime?intent=transcription`: the GA one (`session.update` with
`session.type == "transcription"`, answered by `session.created` / `session.updated`) and the
older beta one (`transcription_session.update`, answered by `transcription_session.*`). Each
is a model here (`GaSession`, `BetaSession`) over the same field types as the audio form's;
both configure one `SessionConfig`, and `beta` records which dialect the client speaks.

Update semantics follow OpenAI's: a field left out of an update keeps its value, at every
level (OpenAI documents this for `noise_reduction.strength`); an explicit `null`
`turn_detection` turns VAD off, and an explicit `null` `idle_timeout_ms` its idle timeout;
`null` elsewhere is the same as leaving the field out, except `transcription`, which can't be
turned off here and so goes back to its defaults, and its fields, which go back to theirs.
Fields this server has no use for (`noise_reduction`, `create_response`, ...) are ignored, so
that clients written for newer API versions still connect; `transcription.delay` is checked
and echoed but changes nothing (Qwen3-ASR has no such knob). Beta field names inside a GA
`session.update` are refused instead: ignoring them would drop the client's language and VAD
settings without a word.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, ClassVar

import pybase64
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo

from ...errors import APIError, EventError
from ...model.catalog import DIARIZE
from ...model.languages import Language
from ...speakers.count import MOST_SPEAKERS
from ...speech.audio import RATE
from ...speech.segmentation import VAD_PREFIX_PADDING_MS, VAD_SILENCE_MS, VAD_THRESHOLD
from ..protocol import fields
from ..protocol.fields import (
    Between,
    Checked,
    Keywords,
    LanguageName,
    Languages,
    OneOf,
    Policy,
    PrefixPaddingMs,
    SilenceDurationMs,
    Text,
    Threshold,
    problem,
)

DEFAULT_SAMPLE_RATE = 24_000  # OpenAI's only PCM rate; 16 kHz is this server's extension
SAMPLE_RATES = (RATE, DEFAULT_SAMPLE_RATE)
G711_RATE = 8_000  # telephone audio, one byte a sample
PCM16 = "pcm16"
G711 = ("g711_ulaw", "g711_alaw")
# Input encodings, by the GA format's type; beta's input_audio_format names them themselves
ENCODINGS = {"audio/pcm": PCM16, "audio/pcmu": G711[0], "audio/pcma": G711[1]}
IDLE_TIMEOUT_MS = (5_000, 30_000)  # OpenAI's bounds for server_vad's idle_timeout_ms
LOGPROBS = "item.input_audio_transcription.logprobs"
# How long semantic_vad waits for more speech after a pause, by eagerness, unless an
# end-of-turn judge ends the turn there: a quarter of the longest wait OpenAI documents for
# each (8 s / 4 s / 2 s), so that "high" is server VAD's 500 ms default.
SEMANTIC_SILENCE_MS = {"low": 2_000, "medium": 1_000, "auto": 1_000, "high": 500}
DELAYS = ("minimal", "low", "medium", "high", "xhigh")
_BETA_KEYS = ("input_audio_format", "input_audio_transcription", "turn_detection")
# Realtime speaks OpenAI's Realtime codes: every value it cannot take is invalid_value
_CODES = {"unsupported_language": "invalid_value"}


@dataclass(frozen=True)
class ServerVad:
    """Server VAD parameters, with OpenAI's defaults."""

    threshold: float = VAD_THRESHOLD
    prefix_padding_ms: int = VAD_PREFIX_PADDING_MS
    silence_duration_ms: int = VAD_SILENCE_MS
    idle_timeout_ms: int | None = None  # no speech for this long commits the silence


@dataclass(frozen=True)
class SemanticVad:
    """semantic_vad: the same VAD at OpenAI's defaults, waiting after a pause as long as
    `eagerness` says (SEMANTIC_SILENCE_MS), unless an end-of-turn judge ends the turn there
    (`entrypoints.realtime.turns`). It takes no threshold or padding, as OpenAI's takes none."""

    eagerness: str = "auto"
    threshold: ClassVar[float] = VAD_THRESHOLD
    prefix_padding_ms: ClassVar[int] = VAD_PREFIX_PADDING_MS
    idle_timeout_ms: ClassVar[None] = None  # OpenAI's idle timeout is server_vad's alone

    @property
    def silence_duration_ms(self) -> int:
        return SEMANTIC_SILENCE_MS[self.eagerness]


@dataclass(frozen=True)
class SessionConfig:
    """The effective configuration of one transcription session.

    Input audio is `encoding` (16-bit little-endian mono PCM, or G.711 at 8 kHz), at
    `sample_rate`. `turn_detection`
    None means the client commits the buffer itself. `model` is checked against the
    catalogue (`check`) and echoed back; `language` and `languages` are kept as the client
    gave them (the session echoes them) and `forced` / `candidates` say what they mean
    together.
    """

    sample_rate: int = DEFAULT_SAMPLE_RATE
    encoding: str = PCM16
    language: Language | None = None
    languages: tuple[Language, ...] = ()
    prompt: str = ""
    keywords: tuple[str, ...] = ()
    model: str | None = None
    delay: str | None = None
    turn_detection: ServerVad | SemanticVad | None = ServerVad()
    logprobs: bool = False
    beta: bool = False
    max_speakers: int | None = None  # a diarizing session opens no more voices than this

    @property
    def forced(self) -> Language | None:
        """The language to transcribe in: `language`, or the only entry of `languages`."""
        return fields.forced_language(self.language, self.languages)[0]

    @property
    def candidates(self) -> tuple[Language, ...]:
        return fields.forced_language(self.language, self.languages)[1]

    @property
    def diarize(self) -> bool:
        """Speakers are labelled: each utterance's segments are events with their speaker."""
        return self.model == DIARIZE

    @property
    def sample_bytes(self) -> int:
        return 1 if self.encoding in G711 else 2

    @property
    def transcription_path(self) -> str:
        """Where `transcription` lives in this dialect's session object."""
        if self.beta:
            return "session.input_audio_transcription"
        return "session.audio.input.transcription"


class _Rate(Checked):
    def check(self, value: Any, info: ValidationInfo) -> int:
        rate = int(fields.read_number(value, info, whole=True))
        if rate not in (*SAMPLE_RATES, G711_RATE):
            raise problem(
                "invalid_value",
                "Invalid value for '{param}': {rate}. Supported sample rates: 24000, 16000 "
                "(audio/pcm), 8000 (audio/pcmu, audio/pcma).",
                rate=rate,
            )
        return rate

    def json_schema(self) -> dict[str, Any]:
        return {"type": "integer", "enum": [*SAMPLE_RATES, G711_RATE]}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class Transcription(_Model):
    model: Text | None = None
    language: LanguageName = None
    languages: Languages | None = None
    prompt: Text | None = None
    keywords: Keywords | None = None
    delay: Annotated[str, OneOf(DELAYS)] | None = None
    max_speakers: Annotated[int, Between(1, MOST_SPEAKERS, whole=True)] | None = None


class TurnDetection(_Model):
    type: Annotated[str, OneOf(("server_vad", "semantic_vad"))] | None = None
    eagerness: Annotated[str, OneOf(tuple(SEMANTIC_SILENCE_MS))] | None = None
    threshold: Threshold | None = None
    prefix_padding_ms: PrefixPaddingMs | None = None
    silence_duration_ms: SilenceDurationMs | None = None
    idle_timeout_ms: Annotated[int, Between(*IDLE_TIMEOUT_MS, whole=True)] | None = None


class AudioFormat(_Model):
    type: Annotated[str, OneOf(tuple(ENCODINGS))] = "audio/pcm"
    rate: Annotated[int, _Rate()] | None = None


class AudioInput(_Model):
    format: AudioFormat | None = None
    transcription: Transcription | None = None
    turn_detection: TurnDetection | None = None


class Audio(_Model):
    input: AudioInput | None = None


class GaSession(_Model):
    type: Annotated[str, OneOf(("transcription",))] = "transcription"
    include: tuple[Annotated[str, OneOf((LOGPROBS,))], ...] | None = None
    audio: Audio | None = None


class BetaSession(_Model):
    include: tuple[Annotated[str, OneOf((LOGPROBS,))], ...] | None = None
    input_audio_format: Annotated[str, OneOf((PCM16, *G711))] | None = None
    input_audio_transcription: Transcription | None = None
    turn_detection: TurnDetection | None = None


class Handshake(_Model):
    """The query of `GET /v1/realtime`: this server offers transcription sessions only."""

    intent: Text | None = None
    model: Text | None = None


def handshake(query: Mapping[str, str], policy: Policy) -> Handshake:
    """The handshake's query, checked before the WebSocket is accepted (a 400, or the
    catalogue's 404 for a model it does not serve)."""
    asked = Handshake.model_validate(dict(query))
    if asked.intent is not None and asked.intent != "transcription":
        raise APIError(
            400,
            f"This server offers transcription sessions only (intent=transcription), not "
            f"{asked.intent!r}: Qwen3-ASR transcribes, it does not converse.",
            param="intent",
            code="unsupported_intent",
        )
    if asked.model is not None:
        policy.catalog.resolve(asked.model, speakers=True)
    return asked


def apply_update(config: SessionConfig, event: dict[str, Any]) -> SessionConfig:
    """The configuration after a `session.update` (GA) or `transcription_session.update`.

    The reply, and every event after it, speak the dialect of the update. Nothing changes
    unless the whole update is valid.
    """
    kind = event.get("type")
    if kind not in ("session.update", "transcription_session.update"):
        raise EventError(f"{kind!r} is not a session update.", "invalid_event", "type")
    session = event.get("session")
    if session is None:
        raise EventError(
            "Missing required parameter: 'session'.", "missing_required_parameter", "session"
        )
    beta = kind == "transcription_session.update"
    for key in () if beta or not isinstance(session, dict) else _BETA_KEYS:
        if key in session:
            raise EventError(
                f"Unknown parameter: 'session.{key}'. That is the beta transcription_session "
                "shape; in session.update it lives under session.audio.input.",
                "unknown_parameter",
                f"session.{key}",
            )
    try:
        if beta:
            updated = _beta(config, BetaSession.model_validate(session))
        else:
            updated = _ga(config, GaSession.model_validate(session))
    except ValidationError as exc:
        raise EventError(*fields.refusal(exc, "session", codes=_CODES)) from None
    try:
        fields.forced_language(updated.language, updated.languages)
    except fields.Problem as exc:
        path = f"{updated.transcription_path}.language"
        raise EventError(*fields.said(exc, path), path) from None
    return updated


def appended_audio(event: dict[str, Any]) -> bytes:
    """The PCM of an `input_audio_buffer.append`: its `audio`, base64-decoded."""
    data = event.get("audio")
    if not isinstance(data, str):
        raise EventError(
            "Missing required parameter: 'audio'.", "missing_required_parameter", "audio"
        )
    try:
        return pybase64.b64decode(data, validate=True)
    except binascii.Error:
        raise EventError("'audio' is not valid base64.", "invalid_value", "audio") from None


def check(config: SessionConfig, policy: Policy) -> None:
    """What only the server can know: the model ids served here, and how much context fits."""
    path = config.transcription_path
    refusal = None if config.model is None else policy.catalog.refusal(config.model, True)
    if refusal is not None:
        raise EventError(refusal.message, refusal.code or "invalid_value", f"{path}.model")
    if config.max_speakers is not None and not config.diarize:
        param = f"{path}.max_speakers"
        raise EventError(f"max_speakers is for model {DIARIZE!r}.", "invalid_value", param)
    try:
        fields.context(config.prompt, config.keywords, policy.context_limit)
    except fields.Problem as exc:
        param = f"{path}.keywords" if config.keywords else f"{path}.prompt"
        raise EventError(*fields.said(exc, param), param) from None


def _ga(config: SessionConfig, session: GaSession) -> SessionConfig:
    updated = _included(replace(config, beta=False), session.include)
    audio_input = session.audio.input if session.audio else None
    if audio_input is None:
        return updated
    if audio_input.format is not None:
        updated = _format(updated, audio_input.format)
    return _input(updated, audio_input, "transcription", "turn_detection")


def _beta(config: SessionConfig, session: BetaSession) -> SessionConfig:
    updated = _included(replace(config, beta=True), session.include)
    encoding = session.input_audio_format
    if encoding is not None:  # beta's pcm16 is 24 kHz by definition
        rate = DEFAULT_SAMPLE_RATE if encoding == PCM16 else G711_RATE
        updated = replace(updated, encoding=encoding, sample_rate=rate)
    return _input(updated, session, "input_audio_transcription", "turn_detection")


def _format(config: SessionConfig, given: AudioFormat) -> SessionConfig:
    """PCM at 24 or 16 kHz (a format without a rate keeps the PCM rate in use), or G.711 at
    8 kHz: a rate the format does not come at is refused, naming the rate."""
    encoding = ENCODINGS[given.type]
    allowed = (G711_RATE,) if encoding in G711 else SAMPLE_RATES
    if given.rate is not None and given.rate not in allowed:
        param = "session.audio.input.format.rate"
        rates = ", ".join(str(rate) for rate in reversed(allowed))
        raise EventError(
            f"Invalid value for '{param}': {given.rate}. {given.type} comes at {rates} Hz.",
            "invalid_value",
            param,
        )
    kept = config.sample_rate if config.encoding == PCM16 else DEFAULT_SAMPLE_RATE
    rate = given.rate or (G711_RATE if encoding in G711 else kept)
    return replace(config, encoding=encoding, sample_rate=rate)


def _included(config: SessionConfig, include: tuple[str, ...] | None) -> SessionConfig:
    return config if include is None else replace(config, logprobs=LOGPROBS in include)


def _input(config: SessionConfig, given: BaseModel, transcription: str, vad: str) -> SessionConfig:
    """`transcription` and `turn_detection`, where the update had them at all."""
    sent = given.model_fields_set
    if transcription in sent:
        config = _transcription(config, getattr(given, transcription))
    if vad in sent:
        config = replace(config, turn_detection=_turn_detection(config, getattr(given, vad)))
    return config


def _transcription(config: SessionConfig, given: Transcription | None) -> SessionConfig:
    if given is None:  # transcription can't be turned off: back to the defaults
        defaults = SessionConfig()
        names = ("language", "languages", "prompt", "keywords", "model", "delay", "max_speakers")
        return replace(config, **{name: getattr(defaults, name) for name in names})
    sent = given.model_fields_set
    changes: dict[str, Any] = {
        name: getattr(given, name) for name in ("model", "language", "max_speakers") if name in sent
    }
    if "languages" in sent:
        changes["languages"] = given.languages or ()
    if "keywords" in sent:
        changes["keywords"] = given.keywords or ()
    if "prompt" in sent:
        changes["prompt"] = given.prompt or ""
    if given.delay is not None:
        changes["delay"] = given.delay
    return replace(config, **changes)


def _turn_detection(
    config: SessionConfig, given: TurnDetection | None
) -> ServerVad | SemanticVad | None:
    """Server VAD, semantic VAD, or None for manual commits. An update without a `type` keeps
    the kind the session has, and every field it leaves out keeps its value."""
    if given is None:
        return None
    vad = config.turn_detection
    semantic = vad if isinstance(vad, SemanticVad) else None
    if (given.type or ("semantic_vad" if semantic else "server_vad")) == "semantic_vad":
        return SemanticVad(given.eagerness or (semantic.eagerness if semantic else "auto"))
    changes = given.model_dump(
        include={"threshold", "prefix_padding_ms", "silence_duration_ms"}, exclude_none=True
    )
    if "idle_timeout_ms" in given.model_fields_set:  # null turns it off
        changes["idle_timeout_ms"] = given.idle_timeout_ms
    return replace(vad if isinstance(vad, ServerVad) else ServerVad(), **changes)
