"""The one value a transcription becomes: what the stages (`stages`) add to and the formats
(`formats`) render. Frozen: a stage returns a new one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.alignment import Word
from ..model.languages import Language
from .usage import Tokens


@dataclass(frozen=True)
class Segment:
    """A piece of the recording, as the model transcribed it."""

    start: float  # seconds into the recording
    end: float
    text: str
    tokens: list[int]  # the ids the model generated, when the backend returns them
    avg_logprob: float  # mean log-probability of those tokens (0.0 when unknown)
    logprobs: list[dict[str, Any]]  # OpenAI's {token, logprob, bytes} for the text's tokens
    words: list[Word] | None = None  # its units' times, once aligned
    speaker: str | None = None  # who says it, when a diarizer said
    channel: int | None = None  # the recording's channel it is on (multichannel)


@dataclass(frozen=True)
class Transcript:
    text: str
    language: Language | None  # the first heard, or the one forced
    duration: float  # of the whole recording, in seconds
    segments: list[Segment]
    logprobs: list[dict[str, Any]]
    tokens: Tokens = field(default_factory=Tokens)  # the usage
    words: list[Word] | None = None  # every segment's, once aligned
    spoken: tuple[Language, ...] = ()  # every language heard, first heard first
