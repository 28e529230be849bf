"""A transcript in each `response_format`, exactly as OpenAI's API shapes it: one renderer per
format (`formats` lists them). Pure: the text of the answer, or a JSON object made from its
model (`responses`), so that what is sent is what /openapi.json publishes."""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any

from ..model.alignment import Word
from . import subtitles
from .request import Body, Request
from .responses import (
    Logprob,
    Transcription,
    TranscriptionDiarized,
    TranscriptionDiarizedSegment,
    TranscriptionSegment,
    TranscriptionVerbose,
    TranscriptionWord,
    Translation,
    TranslationVerbose,
    Verbose,
    heard,
)
from .transcript import Segment, Transcript
from .usage import duration

TRANSLATION_NOTE = (
    "Qwen3-ASR does not translate: this is the transcript in the spoken language{language}."
)


def compression_ratio(text: str) -> float:
    """Whisper's repetition signal: raw bytes over zlib-compressed bytes."""
    raw = text.encode()
    return round(len(raw) / len(zlib.compress(raw)), 4) if raw else 0.0


def _segment(index: int, segment: Segment, temperature: float) -> TranscriptionSegment:
    return TranscriptionSegment(
        id=index,
        seek=round(segment.start * 100),  # Whisper's unit: 10 ms frames
        start=round(segment.start, 3),
        end=round(segment.end, 3),
        text=segment.text,
        tokens=segment.tokens,
        temperature=temperature,
        avg_logprob=round(segment.avg_logprob, 6),
        compression_ratio=compression_ratio(segment.text),
        # Qwen3-ASR marks no speech as `language None`; such pieces never become segments
        no_speech_prob=0.0,
        speaker=segment.speaker,
        channel=segment.channel,
    )


def diarized_segment(index: int, segment: Segment) -> TranscriptionDiarizedSegment:
    """OpenAI's TranscriptionDiarizedSegment, which a stream sends as an event too."""
    return TranscriptionDiarizedSegment(
        id=f"seg_{index}",
        start=round(segment.start, 3),
        end=round(segment.end, 3),
        text=segment.text,
        speaker=segment.speaker or "A",
        channel=segment.channel,
    )


def _noted(transcript: Transcript, request: Request) -> dict[str, Any]:
    """A translation says in its JSON that it is a transcript (the translation shim)."""
    if not request.translation:
        return {}
    spoken = f" ({transcript.language.name})" if transcript.language else ""
    return {"_note": TRANSLATION_NOTE.format(language=spoken)}


def json(transcript: Transcript, request: Request) -> Body:
    """OpenAI's json; usage in seconds for whisper-1 (and other names), as it bills them."""
    usage = duration(transcript.duration) if request.usage_in_seconds else transcript.tokens.usage()
    logprobs = [Logprob(**entry) for entry in transcript.logprobs] if request.logprobs else None
    kind = Translation if request.translation else Transcription
    return kind(
        text=transcript.text,
        languages=heard(transcript.spoken),
        usage=usage,
        logprobs=logprobs,
        **_noted(transcript, request),
    ).body()


def text(transcript: Transcript, request: Request) -> Body:
    return transcript.text + "\n"


def verbose_json(transcript: Transcript, request: Request) -> Body:
    """OpenAI's verbose_json: `segments` unless only words were asked for, `words` if they
    were."""
    segments = None
    if request.timestamp_granularities != {"word"}:
        segments = [
            _segment(index, segment, request.temperature)
            for index, segment in enumerate(transcript.segments)
        ]
    words = None if transcript.words is None else [word_answer(word) for word in transcript.words]
    kind: type[Verbose] = TranslationVerbose if request.translation else TranscriptionVerbose
    return kind(
        task=request.task,
        language=transcript.language.name.lower() if transcript.language else "unknown",
        duration=round(transcript.duration, 3),
        text=transcript.text,
        languages=heard(transcript.spoken),
        segments=segments,
        words=words,
        usage=duration(transcript.duration),
        **_noted(transcript, request),
    ).body()


def diarized_json(transcript: Transcript, request: Request) -> Body:
    """OpenAI's diarized_json: the segments with their speakers."""
    return TranscriptionDiarized(
        duration=round(transcript.duration, 3),
        text=transcript.text,
        segments=[
            diarized_segment(index, segment) for index, segment in enumerate(transcript.segments)
        ],
        usage=duration(transcript.duration)
        if request.usage_in_seconds
        else transcript.tokens.usage(),
    ).body()


def word_answer(word: Word) -> TranscriptionWord:
    """A word as OpenAI's `words` show it, with its speaker when a diarizer said."""
    return TranscriptionWord(word=word.word, start=word.start, end=word.end, speaker=word.speaker)


def cues(transcript: Transcript) -> list[subtitles.Cue]:
    """Subtitle cues: cut at sentence ends with word times when the segments were aligned,
    else with times estimated inside each segment."""
    found: list[subtitles.Cue] = []
    for segment in transcript.segments:
        if segment.words:
            made = subtitles.sentence_cues(segment.text, segment.words)
        else:
            made = subtitles.estimated_cues(segment.start, segment.end, segment.text)
        found += [dataclasses.replace(cue, speaker=segment.speaker) for cue in made]
    return found


def srt(transcript: Transcript, request: Request) -> Body:
    return subtitles.srt(cues(transcript))


def vtt(transcript: Transcript, request: Request) -> Body:
    return subtitles.vtt(cues(transcript))
