"""What one transcription asks for, whichever way it came in: the recording and every option
the core reads, with no HTTP in it.

The audio routes fill one from their multipart form (`entrypoints.audio.protocol.AudioRequest.
transcription`), once the form was checked; anything else that has a recording (a stored
file, samples a live door already decoded) builds one itself and gives it to the service
(`TranscriptionService.accept`). The format of the answer is part of it (`Format`, whose
entries are `formats.FORMATS`): the format decides how the recording is cut and which
stages run, not only how the transcript is written.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

from ..model.languages import Language
from ..speakers.count import SpeakerCount
from ..speech.audio import Audio
from ..speech.segmentation import Chunking
from .transcript import Transcript

Body = dict[str, Any] | str  # a rendered answer: a response model's `body()`, or the text
Task = Literal["transcribe", "translate"]


class Words(enum.Enum):
    """Whether a format shows word times."""

    NEVER = "never"
    ASKED = "asked"  # when `timestamp_granularities[]=word` asks (and an aligner can)
    PREFERRED = "preferred"  # whenever an aligner can give them (subtitle cues end at sentences)


@dataclass(frozen=True)
class Format:
    """A `response_format`: how its answer is rendered, and what it needs of the transcript."""

    name: str
    content_type: str
    render: Callable[[Transcript, Request], Body]
    segments: bool = False  # it shows timed segments: the audio is always cut at pauses
    words: Words = Words.NEVER
    streams: bool = False  # `stream=true` may ask for it (OpenAI's transcript events)
    logprobs: bool = False  # `include[]=logprobs` may ask for it
    speakers: bool = False  # only a diarizing model gives it (its segments have speakers)
    # where pieces are cut when no word times come (None: this server's own plan)
    unaligned_chunking: Chunking | None = None


@dataclass(frozen=True)
class Encoded:
    """A recording not decoded yet, in any format the server decodes: a file read from its
    start, and its size in bytes (what the audio budget's first estimate is made from)."""

    file: BinaryIO
    size: int


@dataclass(frozen=True)
class Reference:
    """A speaker the client named, with a clip of their voice: the diarizer labels the
    segments that sound like it with `name`."""

    name: str
    voice: Audio


@dataclass(frozen=True)
class Request:
    """A recording and how to transcribe it. The defaults are OpenAI's: a transcript in the
    language the model hears, at temperature 0, billed in seconds."""

    audio: Encoded | Audio  # to be decoded, or its samples already (16 kHz mono)
    response_format: Format
    task: Task = "transcribe"  # "translate": verbose_json's `task`, and a note that it is not
    forced: Language | None = None  # the language to transcribe in (None: the model detects it)
    candidates: tuple[Language, ...] = ()  # the languages the model may choose among
    context: str | None = None  # what the model is told first: names, terms, a topic
    temperature: float = 0.0
    logprobs: bool = False  # the text tokens' log-probabilities, in formats that show them
    timestamp_granularities: frozenset[str] = frozenset()  # "word", "segment"
    chunking: Chunking | None = None  # where the client cuts the audio (None: this server)
    diarize: bool = False  # speakers are labelled (the diarizing model)
    known: tuple[Reference, ...] = ()  # the speakers named, in order, for the diarizer
    speakers: SpeakerCount | None = None  # how many spoke, if the client said (None: it finds)
    multichannel: bool = False  # each channel transcribed apart, its own speaker (`channels`)
    channel_names: tuple[str, ...] = ()  # the channels' speakers, in channel order
    usage_in_seconds: bool = True  # whisper-1's usage (seconds), not gpt-*'s (tokens)

    @property
    def translation(self) -> bool:
        return self.task == "translate"

    @property
    def words(self) -> bool:
        """Word timestamps were asked for."""
        return "word" in self.timestamp_granularities
