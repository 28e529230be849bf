"""Shape a transcript as the client asked (`response_format`), exactly as OpenAI's API does."""

from __future__ import annotations

import zlib
from typing import Any

from fastapi.responses import JSONResponse, PlainTextResponse, Response

from .. import languages, subtitles
from .transcribe import Segment, Transcript
from .usage import duration

CONTENT_TYPES = {
    "text": "text/plain; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
}


def compression_ratio(text: str) -> float:
    """Whisper's repetition signal: raw bytes over zlib-compressed bytes."""
    raw = text.encode()
    return round(len(raw) / len(zlib.compress(raw)), 4) if raw else 0.0


def _segment(index: int, segment: Segment, temperature: float) -> dict[str, Any]:
    return {
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


def verbose(
    transcript: Transcript,
    *,
    task: str,
    temperature: float,
    granularities: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """OpenAI's verbose_json: `segments` unless only words were asked for, `words` if they
    were."""
    body: dict[str, Any] = {
        "task": task,
        "language": (transcript.language or "unknown").lower(),
        "duration": round(transcript.duration, 3),
        "text": transcript.text,
        "languages": languages.detected(transcript.spoken),
    }
    if granularities != {"word"}:
        body["segments"] = [
            _segment(index, segment, temperature)
            for index, segment in enumerate(transcript.segments)
        ]
    if transcript.words is not None:
        body["words"] = [
            {"word": word.word, "start": word.start, "end": word.end} for word in transcript.words
        ]
    body["usage"] = duration(transcript.duration)
    return body


def cues(transcript: Transcript) -> list[subtitles.Cue]:
    """Subtitle cues: cut at sentence ends with word times when the segments were aligned,
    else with times estimated inside each segment."""
    found: list[subtitles.Cue] = []
    for segment in transcript.segments:
        if segment.words:
            found += subtitles.sentence_cues(segment.text, segment.words)
        else:
            found += subtitles.estimated_cues(segment.start, segment.end, segment.text)
    return found


def render(
    transcript: Transcript,
    response_format: str,
    *,
    task: str,
    temperature: float,
    logprobs: bool = False,
    note: str | None = None,
    granularities: frozenset[str] = frozenset(),
    by_duration: bool = False,
) -> Response:
    """`by_duration`: json's usage in seconds, as whisper-1's is, not in tokens."""
    if response_format in ("srt", "vtt"):
        writer = subtitles.srt if response_format == "srt" else subtitles.vtt
        return PlainTextResponse(
            writer(cues(transcript)), media_type=CONTENT_TYPES[response_format]
        )
    if response_format == "text":
        return PlainTextResponse(transcript.text + "\n", media_type=CONTENT_TYPES["text"])
    if response_format == "verbose_json":
        body = verbose(transcript, task=task, temperature=temperature, granularities=granularities)
    else:
        usage = duration(transcript.duration) if by_duration else transcript.tokens.body()
        body = {
            "text": transcript.text,
            "languages": languages.detected(transcript.spoken),
            "usage": usage,
        }
        if logprobs:
            body["logprobs"] = transcript.logprobs
    if note is not None:
        body["_note"] = note
    return JSONResponse(body)
