"""The audio routes' request: the multipart form of /v1/audio/transcriptions and /translations.

`TranscriptionRequest` and `TranslationRequest` are the only place their fields are described:
`read` validates a form into one (every field checked before any work is done, a bad one a
400 naming it), and `openapi` publishes them. A translation takes no `language`: Qwen3-ASR
detects it (and does not translate, see docs/features/translations.md).

The form spells a list field `keywords[]` (OpenAI's SDKs) or `keywords`, and an object field
as its parts (`chunking_strategy[threshold]`) or as one JSON value.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, ClassVar, TypeVar, get_args, get_origin

import orjson
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic import WithJsonSchema as Schema
from pydantic.json_schema import SkipJsonSchema
from starlette.datastructures import FormData, UploadFile

from ...errors import APIError, too_large
from ...model.catalog import DIARIZE
from ...model.languages import Language
from ...speakers.count import MOST_SPEAKERS, SpeakerCount
from ...speech.segmentation import Chunking
from ...transcription.channels import MAX_CHANNELS
from ...transcription.formats import FORMATS, named
from ...transcription.request import Encoded, Format, Reference, Request, Task, Words
from ..protocol import fields
from ..protocol.fields import (
    Between,
    Flag,
    Keywords,
    LanguageName,
    Languages,
    OneOf,
    Plain,
    PrefixPaddingMs,
    SilenceDurationMs,
    Text,
    Threshold,
    problem,
)
from . import known_speakers as speakers

Granularity = Annotated[str, OneOf(("word", "segment"))]
Include = Annotated[str, OneOf(("logprobs",))]
Speakers = Annotated[int, Between(1, MOST_SPEAKERS, whole=True)]
_NAMES = ", ".join(FORMATS)


def _upload(value: Any) -> UploadFile:
    if not isinstance(value, UploadFile):
        raise problem("invalid_value", "'{param}' must be an uploaded file, not a text field.")
    return value


def _format(value: Any) -> Format:
    if not isinstance(value, str) or value not in FORMATS:
        raise problem("invalid_value", f"Invalid '{{param}}' {value!r}: use one of {_NAMES}.")
    return FORMATS[value]


def _json_object(value: Any) -> Any:
    """`chunking_strategy` sent as one field: "auto", or a server_vad object as JSON."""
    if value == "auto":
        return {"type": "auto"}
    if not isinstance(value, str):  # its parts, or (from JSON) an object already
        return value
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise problem(
            "invalid_value", f"Invalid '{{param}}' {value!r}: use \"auto\" or a server_vad object."
        )
    return parsed


class ChunkingStrategy(BaseModel):
    """OpenAI's `chunking_strategy`: "auto" (this server's own cut, which `type: auto` also
    names), or server_vad with Realtime's parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Annotated[str, OneOf(("auto", "server_vad"))]
    threshold: Threshold | None = None
    prefix_padding_ms: PrefixPaddingMs | None = None
    silence_duration_ms: SilenceDurationMs | None = None

    def plan(self) -> Chunking:
        if self.type == "auto":
            return Chunking()
        given = self.model_dump(exclude={"type"}, exclude_none=True)
        return Chunking.server_vad(**given)


_PARTS = ", ".join(f"[{name}]" for name in ChunkingStrategy.model_fields)
_CHUNKING_SCHEMA = {
    "type": "string",
    "description": f'"auto", or a server_vad object as JSON (or as chunking_strategy{_PARTS}).',
}
Upload = Annotated[
    UploadFile,
    Plain(_upload, {"type": "string", "format": "binary", "description": "Any audio or video."}),
]
ResponseFormat = Annotated[Format, Plain(_format, {"type": "string", "enum": list(FORMATS)})]
Strategy = Annotated[ChunkingStrategy, BeforeValidator(_json_object), Schema(_CHUNKING_SCHEMA)]


class Uploaded(BaseModel):
    """A form with an audio `file`, which `read` reads."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    file: Upload


Form = TypeVar("Form", bound=Uploaded)


class AudioRequest(Uploaded):
    """What both audio routes take; a translation's form as it is."""

    task: ClassVar[Task] = "translate"  # verbose_json's `task`
    model: Text | None = Field(
        None, description="The served name, an alias, or an OpenAI model name."
    )
    prompt: Text | None = Field(None, description="Context for the model: names, terms, a topic.")
    keywords: Keywords = ()
    response_format: ResponseFormat = Field("json", validate_default=True)
    temperature: Annotated[float, Between(0.0, 1.0)] = 0.0
    timestamp_granularities: frozenset[Granularity] = Field(
        frozenset(), description="word needs response_format verbose_json and an aligner."
    )
    include: tuple[Include, ...] = ()
    chunking_strategy: Strategy | None = None
    stream: SkipJsonSchema[Flag] = False  # refused: translations do not stream
    known_speaker_names: tuple[Text, ...] = Field(
        (), description=f"Up to {speakers.MAX_KNOWN} names, for model {DIARIZE}."
    )
    known_speaker_references: tuple[Text, ...] = Field(
        (), description="A data URL of 2-10 s of each named speaker's voice, in order."
    )
    min_speakers: Speakers | None = Field(None, description=f"For model {DIARIZE}.")
    max_speakers: Speakers | None = Field(None, description="min = max: exactly that many.")
    multichannel: Flag = Field(
        False,
        description="Each channel transcribed apart, its own speaker (Deepgram's and "
        f"AssemblyAI's field); up to {MAX_CHANNELS} channels; mono is channel 0.",
    )
    _context: str | None = PrivateAttr(None)
    _known: tuple[Reference, ...] = PrivateAttr(())
    _count: SpeakerCount | None = PrivateAttr(None)
    _channel_names: tuple[str, ...] = PrivateAttr(())

    @property
    def translation(self) -> bool:
        return self.task == "translate"

    @property
    def forced(self) -> Language | None:
        """The language to transcribe in (none: the model detects it)."""
        return None

    @property
    def candidates(self) -> tuple[Language, ...]:
        """The languages the model may choose among (`languages[]` with several)."""
        return ()

    @property
    def context(self) -> str | None:
        """The prompt and keywords as the model's context."""
        return self._context

    @property
    def chunking(self) -> Chunking | None:
        """Where the client asked for the audio to be cut; None: this server's own plan."""
        return self.chunking_strategy.plan() if self.chunking_strategy else None

    @property
    def diarize(self) -> bool:
        """Speakers are labelled (the diarizing model)."""
        return self.model == DIARIZE

    @property
    def known(self) -> tuple[Reference, ...]:
        """The speakers the client named, with their voices."""
        return self._known

    @property
    def logprobs(self) -> bool:
        return bool(self.include)

    @property
    def words(self) -> bool:
        """Word timestamps were asked for."""
        return "word" in self.timestamp_granularities

    @property
    def usage_in_seconds(self) -> bool:
        """Whisper-1's usage (seconds), not gpt-*'s (tokens), as OpenAI bills them."""
        return not (self.model or "").startswith("gpt-")

    def transcription(self) -> Request:
        """What the core takes: the uploaded file and the options this form asked for."""
        return Request(
            audio=Encoded(self.file.file, self.file.size or 0),
            response_format=self.response_format,
            task=self.task,
            forced=self.forced,
            candidates=self.candidates,
            context=self.context,
            temperature=self.temperature,
            logprobs=self.logprobs,
            timestamp_granularities=self.timestamp_granularities,
            chunking=self.chunking,
            diarize=self.diarize,
            known=self.known,
            speakers=self._count,
            usage_in_seconds=self.usage_in_seconds,
            multichannel=self.multichannel,
            channel_names=self._channel_names,
        )

    @model_validator(mode="after")
    def _together(self, info: ValidationInfo) -> AudioRequest:
        """What the fields say together, and what this server can take."""
        kind = self.response_format
        if self.stream and self.translation:
            raise APIError(400, "Translations do not stream; send stream=false.", param="stream")
        if self.stream and not kind.streams:
            raise _unsupported(
                f"stream=true cannot be combined with response_format {kind.name!r}: streamed "
                "transcripts are transcript.text.delta events; use response_format "
                f"{named(streams=True)}.",
                "stream",
            )
        if self.words and kind.words is not Words.ASKED:
            raise _unsupported(
                f"Word timestamps come with response_format={named(words=Words.ASKED)}, not "
                f"{kind.name!r}.",
                "timestamp_granularities",
            )
        if self.include and not kind.logprobs:
            raise _unsupported(
                f"include[]=logprobs needs response_format {named(logprobs=True)}, not "
                f"{kind.name!r}.",
                "include",
            )
        policy = fields.policy(info)
        policy.catalog.resolve(self.model, speakers=not self.translation)
        self._speakers(kind)
        try:
            self._context = fields.context(self.prompt, self.keywords, policy.context_limit)
        except fields.Problem as exc:
            raise fields.told(exc, "keywords" if self.keywords else "prompt") from None
        return self

    def _speakers(self, kind: Format) -> None:
        counted = (self.min_speakers, self.max_speakers)
        if counted != (None, None) and (self.multichannel or not self.diarize):
            message = (
                f"min_speakers and max_speakers are for model {DIARIZE!r}, without multichannel "
                "(where the channels are the speakers)."
            )
            raise _unsupported(message, speakers.LEAST if counted[0] else speakers.MOST)
        self._count = speakers.count(*counted)
        if self.multichannel:  # the channels are the speakers, whichever the model
            self._channel_names = speakers.channel_names(
                self.known_speaker_names, self.known_speaker_references
            )
            return
        if kind.speakers and not self.diarize:
            raise _unsupported(
                f"response_format {kind.name!r} labels speakers: it needs model {DIARIZE!r}.",
                "response_format",
            )
        if (self.known_speaker_names or self.known_speaker_references) and not self.diarize:
            raise _unsupported(
                f"known_speaker_names[] and known_speaker_references[] are for model {DIARIZE!r}.",
                speakers.NAMES if self.known_speaker_names else speakers.REFERENCES,
            )
        self._known = speakers.references(self.known_speaker_names, self.known_speaker_references)


class TranscriptionRequest(AudioRequest):
    task: ClassVar[Task] = "transcribe"
    language: LanguageName = None
    languages: Languages = ()
    stream: Flag = Field(
        False, description="transcript.text.delta events, then transcript.text.done (SSE)."
    )
    _forced: Language | None = PrivateAttr(None)
    _candidates: tuple[Language, ...] = PrivateAttr(())

    @property
    def forced(self) -> Language | None:
        return self._forced

    @property
    def candidates(self) -> tuple[Language, ...]:
        return self._candidates

    @model_validator(mode="after")
    def _language(self) -> TranscriptionRequest:
        try:
            self._forced, self._candidates = fields.forced_language(self.language, self.languages)
        except fields.Problem as exc:
            raise fields.told(exc, "language") from None
        return self


def _unsupported(message: str, param: str) -> APIError:
    return APIError(400, message, param=param, code="unsupported_value")


@functools.cache
def _kinds(model: type[Uploaded]) -> tuple[frozenset[str], frozenset[str]]:
    """The fields of `model` that are lists, and those that are objects."""
    lists, objects = set(), set()
    for name, field in model.model_fields.items():
        if get_origin(field.annotation) in (tuple, frozenset, list):
            lists.add(name)
        types = [get_args(each)[0] if get_origin(each) is Annotated else each for each in
                 get_args(field.annotation) or (field.annotation,)]  # fmt: skip
        if any(isinstance(each, type) and issubclass(each, BaseModel) for each in types):
            objects.add(name)
    return frozenset(lists), frozenset(objects)


def _values(form: FormData, model: type[Uploaded]) -> dict[str, Any]:
    """The form's values for `model`'s fields, read in one pass: text stripped (an empty
    field is a field left out), every value of a list field (`name[]` first, then `name`),
    the parts of an object field, the last value of any other."""
    (lists, objects), known = _kinds(model), model.model_fields
    spelled: dict[str, list[Any]] = {}  # list values, as `name[]`
    bare: dict[str, list[Any]] = {}  # and as `name`
    parts: dict[str, dict[str, Any]] = {}
    values: dict[str, Any] = {}
    for key, raw in form.multi_items():
        value = raw.strip() if isinstance(raw, str) else raw
        if key in lists:
            bare.setdefault(key, []).append(value)
        elif key.endswith("[]") and key[:-2] in lists:
            spelled.setdefault(key[:-2], []).append(value)
        elif key in known:
            values[key] = value
        else:
            name, bracket, rest = key.partition("[")
            if bracket and len(rest) > 1 and rest.endswith("]") and name in objects:
                parts.setdefault(name, {})[rest[:-1]] = value
    # an empty field is one left out, but for one that must be sent (the file): it is wrong
    values = {
        name: value for name, value in values.items() if value != "" or known[name].is_required()
    }
    clash = next(iter(parts.keys() & values.keys()), None)
    if clash is not None:
        message = f"Send '{clash}' as one field or as its parts, not both."
        raise APIError(400, message, param=clash, code="invalid_value")
    for name in spelled.keys() | bare.keys():
        values[name] = spelled.get(name, []) + bare.get(name, [])
    return values | parts


def read(form: FormData, model: type[Form], policy: fields.Policy) -> Form:
    """The form as `model` (TranscriptionRequest, TranslationRequest, an alignment's); a 400
    naming the first field that is wrong (`file` first of all: without audio nothing else
    matters)."""
    if form.get("file") is None:
        raise APIError(400, "You must provide an audio 'file'.", param="file", code="missing_file")
    context = {fields.TEXT: True, fields.POLICY: policy}
    try:
        request = model.model_validate(_values(form, model), context=context)
    except ValidationError as exc:
        raise fields.api_error(exc) from None
    upload = request.file
    if upload.size is not None and upload.size > policy.upload_limit:
        raise too_large(policy.upload_limit, upload.size)
    if not upload.size:
        raise APIError(400, "The audio 'file' is empty.", param="file", code="empty_file")
    return request


TranslationRequest = AudioRequest
