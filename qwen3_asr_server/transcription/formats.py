"""The response formats, one entry each: what the form accepts (`response_format`), what the
schema lists, how the transcript is planned and rendered, all read from here.

Adding a format is one entry here and its renderer (`render`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..speech.segmentation import Chunking
from . import render as renderers

if TYPE_CHECKING:
    from ..protocol.form import AudioRequest
    from .transcript import Transcript

JSON = "application/json"
# Subtitles without word times: every pause this long ends a piece, so cues follow speech
SUBTITLE_CHUNKING = Chunking(min_pause=0.7, every_pause=True)


class Words(enum.Enum):
    """Whether a format shows word times."""

    NEVER = "never"
    ASKED = "asked"  # when `timestamp_granularities[]=word` asks (and an aligner can)
    PREFERRED = "preferred"  # whenever an aligner can give them (subtitle cues end at sentences)


@dataclass(frozen=True)
class Format:
    name: str
    content_type: str
    render: Callable[[Transcript, AudioRequest], renderers.Body]
    segments: bool = False  # it shows timed segments: the audio is always cut at pauses
    words: Words = Words.NEVER
    streams: bool = False  # `stream=true` may ask for it (OpenAI's transcript events)
    logprobs: bool = False  # `include[]=logprobs` may ask for it
    speakers: bool = False  # only a diarizing model gives it (its segments have speakers)
    # where pieces are cut when no word times come (None: this server's own plan)
    unaligned_chunking: Chunking | None = None


FORMATS = {
    entry.name: entry
    for entry in (
        Format("json", JSON, renderers.json, streams=True, logprobs=True),
        Format("text", "text/plain; charset=utf-8", renderers.text),
        Format("verbose_json", JSON, renderers.verbose_json, segments=True, words=Words.ASKED),
        Format(
            "diarized_json",
            JSON,
            renderers.diarized_json,
            segments=True,
            streams=True,
            speakers=True,
        ),
        Format(
            "srt",
            "application/x-subrip; charset=utf-8",
            renderers.srt,
            segments=True,
            words=Words.PREFERRED,
            unaligned_chunking=SUBTITLE_CHUNKING,
        ),
        Format(
            "vtt",
            "text/vtt; charset=utf-8",
            renderers.vtt,
            segments=True,
            words=Words.PREFERRED,
            unaligned_chunking=SUBTITLE_CHUNKING,
        ),
    )
}


def named(*, streams: bool = False, logprobs: bool = False, words: Words | None = None) -> str:
    """The formats that can do something, for messages: "json" or "srt, vtt"."""
    found = [
        entry.name
        for entry in FORMATS.values()
        if (entry.streams or not streams)
        and (entry.logprobs or not logprobs)
        and (words is None or entry.words == words)
    ]
    return ", ".join(found)
