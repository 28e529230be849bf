"""An alignment in each `response_format`: the shapes of `timestamp_granularities[]=word`
(OpenAI's `words`, verbose_json, and subtitle cues cut at sentence ends, rendered by the
transcription's own renderers), with `placed` in the JSON ones: the share of the text's words
the aligner placed itself, in order, rather than had their times filled in."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ...model.alignment import Word
from ...transcription import render
from ...transcription.formats import FORMATS, JSON
from ...transcription.request import Body, Format, Request
from ...transcription.responses import Answer, TranscriptionVerbose, TranscriptionWord
from ...transcription.transcript import Transcript

PLACED = "Share of the text's words the aligner placed in order (1.0: all); see the docs."


def placed(words: Sequence[Word]) -> float:
    """The share of `words` the aligner placed itself (none: 0)."""
    return round(sum(word.placed for word in words) / len(words), 3) if words else 0.0


class Alignment(Answer):
    """response_format json: the text and its words."""

    text: str
    words: list[TranscriptionWord]
    placed: float


class AlignmentVerbose(TranscriptionVerbose):
    """response_format verbose_json: a transcription's, with words and segments."""

    placed: float


def _json(transcript: Transcript, request: Request) -> Body:
    words = transcript.words or []
    return Alignment(
        text=transcript.text,
        words=[render.word_answer(word) for word in words],
        placed=placed(words),
    ).body()


def _verbose_json(transcript: Transcript, request: Request) -> Body:
    both = dataclasses.replace(request, timestamp_granularities=frozenset({"word", "segment"}))
    body = render.verbose_json(transcript, both)
    assert isinstance(body, dict)  # verbose_json is JSON
    return AlignmentVerbose(**body, placed=placed(transcript.words or [])).body()


FORMATS_ALIGNED = {
    entry.name: entry
    for entry in (
        Format("json", JSON, _json),
        Format("verbose_json", JSON, _verbose_json),
        FORMATS["srt"],
        FORMATS["vtt"],
    )
}
ANSWERS = (Alignment, AlignmentVerbose)
