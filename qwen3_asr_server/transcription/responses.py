"""The audio routes' answers as models: what the renderers (`render`) and the stream
(`streaming`) fill, and what /openapi.json publishes (`entrypoints.audio.openapi`).

They are the shapes of OpenAI's `openai.types.audio`, under its names, but declared here:
this server sends their keys in another order than OpenAI's classes list them, and answers
more (`languages` in verbose_json, a segment's or word's `speaker`, a segment's `channel`, a
translation's `_note`); the bytes sent must stay those clients have always had.

A field that is sometimes left out is never null: `absent()` leaves it out of the body when it
is None, and the schema publishes it as optional, not as nullable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from ..model.languages import Language, detected


def _none(value: object) -> bool:
    return value is None


def _no_default(schema: JsonDict) -> None:
    """An absent field has no value to publish as its default (None is never sent)."""
    schema.pop("default", None)


def absent() -> Any:
    """A field left out of the body while it is None."""
    return Field(default=None, exclude_if=_none, json_schema_extra=_no_default)


def _required(schema: JsonDict, model: type[BaseModel]) -> None:
    """Every field is sent but those `absent()` may leave out, defaults too (`type`). Not
    pydantic's `json_schema_serialization_defaults_required`: early 2.12 releases make it
    require `exclude_if` fields as well (pydantic#12424)."""
    schema["required"] = [
        field.alias or name
        for name, field in model.model_fields.items()
        if field.exclude_if is None
    ]


class Answer(BaseModel):
    """A JSON object this server sends. Extra keys are refused, so that each published shape
    is exactly what is sent and the JSON formats' `oneOf` matches one of them only."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_required)

    def body(self) -> dict[str, Any]:
        """The object, keys in the order declared, absent fields left out."""
        return self.model_dump(by_alias=True)


class TranscriptionLanguage(Answer):
    code: str


def heard(spoken: Iterable[Language]) -> list[TranscriptionLanguage]:
    """OpenAI's `languages`: each language heard, once, first heard first."""
    return [TranscriptionLanguage(**entry) for entry in detected(spoken)]


class Logprob(Answer):
    token: str
    logprob: float
    bytes: list[int]


class InputTokenDetails(Answer):
    audio_tokens: int
    text_tokens: int


class UsageTokens(Answer):
    """gpt-4o-transcribe's usage: tokens read and written."""

    type: Literal["tokens"] = "tokens"
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_token_details: InputTokenDetails | SkipJsonSchema[None] = absent()


class UsageDuration(Answer):
    """whisper-1's usage: the audio's length, as OpenAI bills it."""

    type: Literal["duration"] = "duration"
    seconds: float


Usage = Annotated[UsageTokens | UsageDuration, Field(discriminator="type")]


class Transcription(Answer):
    """response_format json."""

    text: str
    languages: list[TranscriptionLanguage]
    usage: Usage
    logprobs: list[Logprob] | SkipJsonSchema[None] = absent()


class Translation(Transcription):
    """A translation's json: Qwen3-ASR does not translate, so it is the transcript, and says so
    in `_note`."""

    note: str = Field(alias="_note")


class TranscriptionSegment(Answer):
    """A segment of verbose_json, with Whisper's fields for the clients that read them."""

    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: list[int]
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    speaker: str | SkipJsonSchema[None] = absent()
    channel: int | SkipJsonSchema[None] = absent()  # multichannel: the channel it is on


class TranscriptionWord(Answer):
    word: str
    start: float
    end: float
    speaker: str | SkipJsonSchema[None] = absent()


class Verbose(Answer):
    """What a transcription's and a translation's verbose_json share; `task` names which."""

    task: str
    language: str  # its English name in lower case, "unknown" when none was heard
    duration: float
    text: str
    languages: list[TranscriptionLanguage]
    segments: list[TranscriptionSegment] | SkipJsonSchema[None] = absent()
    words: list[TranscriptionWord] | SkipJsonSchema[None] = absent()
    usage: UsageDuration


class TranscriptionVerbose(Verbose):
    """response_format verbose_json."""

    task: Literal["transcribe"]


class TranslationVerbose(Verbose):
    """A translation's verbose_json: the transcript, which says so in `_note`."""

    task: Literal["translate"]
    note: str = Field(alias="_note")


class TranscriptionDiarizedSegment(Answer):
    """A segment of diarized_json, and the stream's `transcript.text.segment` event."""

    type: Literal["transcript.text.segment"] = "transcript.text.segment"
    id: str
    start: float
    end: float
    text: str
    speaker: str
    channel: int | SkipJsonSchema[None] = absent()  # multichannel: the channel it is on


class TranscriptionDiarized(Answer):
    """response_format diarized_json."""

    task: Literal["transcribe"] = "transcribe"
    duration: float
    text: str
    segments: list[TranscriptionDiarizedSegment]
    usage: Usage


class TranscriptionTextDeltaEvent(Answer):
    """Text as it comes; `segment_id` names its diarized segment."""

    type: Literal["transcript.text.delta"] = "transcript.text.delta"
    delta: str
    logprobs: list[Logprob] | SkipJsonSchema[None] = absent()
    segment_id: str | SkipJsonSchema[None] = absent()
    channel: int | SkipJsonSchema[None] = absent()  # multichannel: the channel it is on


class TranscriptionTextDoneEvent(Answer):
    """The stream's last event: the whole text."""

    type: Literal["transcript.text.done"] = "transcript.text.done"
    text: str
    languages: list[TranscriptionLanguage]
    usage: UsageTokens
    logprobs: list[Logprob] | SkipJsonSchema[None] = absent()


class Error(Answer):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(Answer):
    """OpenAI's error object: every 4xx and 5xx, and a stream's last event when it fails."""

    error: Error


# What each route's JSON formats answer, and what a stream's `data:` lines carry
TRANSCRIPTIONS = (Transcription, TranscriptionVerbose, TranscriptionDiarized)
TRANSLATIONS = (Translation, TranslationVerbose)
STREAM_EVENTS = (
    TranscriptionTextDeltaEvent,
    TranscriptionDiarizedSegment,
    TranscriptionTextDoneEvent,
    ErrorResponse,
)
