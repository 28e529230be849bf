"""A transcript in each `response_format`, exactly as OpenAI's API shapes it: one renderer per
format (`formats` lists them). Pure: a JSON object or the text of the answer."""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any

from ..model import languages
from ..model.alignment import Word
from . import subtitles
from .request import Body, Request
from .transcript import Segment, Transcript
from .usage import duration

TRANSLATION_NOTE = (
    "Qwen3-ASR does not translate: this is the transcript in the spoken language{language}."
)


def compression_ratio(text: str) -> float:
    """Whisper's repetition signal: raw bytes over zlib-compressed bytes."""
    raw = text.encode()
    return round(len(raw) / len(zlib.compress(raw)), 4) if raw else 0.0


def _segment(index: int, segment: Segment, temperature: float) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": index,
        "seek": round(segment.start * 100),  # Whisper's unit: 10 ms frames
        "start": round(segment.start, 3),
        "end": round(segment.end, 3),
        "text": segment.text,
        "tokens": segment.tokens,
        "temperature": temperature,
        "avg_logprob": round(segment.avg_logprob, 6),
        "compression_ratio": compression_ratio(segment.text),
        # Qwen3-ASR marks no speech as `language None`; such pieces never become segments
        "no_speech_prob": 0.0,
    }
    if segment.speaker is not None:
        body["speaker"] = segment.speaker
    return body


def diarized_segment(index: int, segment: Segment) -> dict[str, Any]:
    """OpenAI's TranscriptionDiarizedSegment, which a stream sends as an event too."""
    return {
        "type": "transcript.text.segment",
        "id": f"seg_{index}",
        "start": round(segment.start, 3),
        "end": round(segment.end, 3),
        "text": segment.text,
        "speaker": segment.speaker or "A",
    }


def _noted(body: dict[str, Any], transcript: Transcript, request: Request) -> dict[str, Any]:
    """A translation says in its JSON that it is a transcript (the translation shim)."""
    if request.translation:
        spoken = f" ({transcript.language.name})" if transcript.language else ""
        body["_note"] = TRANSLATION_NOTE.format(language=spoken)
    return body


def json(transcript: Transcript, request: Request) -> Body:
    """OpenAI's json; usage in seconds for whisper-1 (and other names), as it bills them."""
    usage = duration(transcript.duration) if request.usage_in_seconds else transcript.tokens.body()
    body: dict[str, Any] = {
        "text": transcript.text,
        "languages": languages.detected(transcript.spoken),
        "usage": usage,
    }
    if request.logprobs:
        body["logprobs"] = transcript.logprobs
    return _noted(body, transcript, request)


def text(transcript: Transcript, request: Request) -> Body:
    return transcript.text + "\n"


def verbose_json(transcript: Transcript, request: Request) -> Body:
    """OpenAI's verbose_json: `segments` unless only words were asked for, `words` if they
    were."""
    body: dict[str, Any] = {
        "task": request.task,
        "language": transcript.language.name.lower() if transcript.language else "unknown",
        "duration": round(transcript.duration, 3),
        "text": transcript.text,
        "languages": languages.detected(transcript.spoken),
    }
    if request.timestamp_granularities != {"word"}:
        body["segments"] = [
            _segment(index, segment, request.temperature)
            for index, segment in enumerate(transcript.segments)
        ]
    if transcript.words is not None:
        body["words"] = [_word(word) for word in transcript.words]
    body["usage"] = duration(transcript.duration)
    return _noted(body, transcript, request)


def diarized_json(transcript: Transcript, request: Request) -> Body:
    """OpenAI's diarized_json: the segments with their speakers."""
    return {
        "task": "transcribe",
        "duration": round(transcript.duration, 3),
        "text": transcript.text,
        "segments": [
            diarized_segment(index, segment) for index, segment in enumerate(transcript.segments)
        ],
        "usage": duration(transcript.duration)
        if request.usage_in_seconds
        else transcript.tokens.body(),
    }


def _word(word: Word) -> dict[str, Any]:
    body: dict[str, Any] = {"word": word.word, "start": word.start, "end": word.end}
    if word.speaker is not None:
        body["speaker"] = word.speaker
    return body


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
