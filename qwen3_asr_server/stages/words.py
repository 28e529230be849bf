"""Word times, from Qwen3-ForcedAligner: the first stage.

Asked for by `timestamp_granularities[]=word` (a 400 when no aligner runs, or for a language
it was not trained on), and taken whenever an aligner runs for a format that prefers words
(subtitle cues cut at sentence ends), in the languages it knows. Each segment is aligned in
one pass, so the pieces are cut to fit the aligner's window (alignment.MAX_SECONDS).
"""

from __future__ import annotations

import asyncio
import dataclasses

from ..backend.aligner import Aligner
from ..errors import APIError
from ..model import alignment
from ..speech.audio import RATE, Audio
from ..transcription.pieces import Cuts, all_or_nothing
from ..transcription.request import Request, Words
from ..transcription.transcript import Segment, Transcript


class WordAlignment:
    provides = frozenset({"words"})
    max_seconds = alignment.MAX_SECONDS

    def __init__(self, aligner: Aligner | None, concurrency: int) -> None:
        self.aligner = aligner  # None: the server runs no aligner
        self.concurrency = concurrency  # segments aligned at once, as pieces are transcribed

    def needed(self, request: Request) -> bool:
        language = request.forced
        alignable = language is None or language in alignment.LANGUAGES
        if not request.words:
            preferred = request.response_format.words is Words.PREFERRED
            return preferred and alignable and self.aligner is not None
        if self.aligner is None:
            raise APIError(
                400,
                "Word timestamps need Qwen3-ForcedAligner, which this server was not started "
                "with: start it with --aligner Qwen/Qwen3-ForcedAligner-0.6B (or --aligner-url "
                "pointing at a vLLM that serves it). timestamp_granularities[]=segment works "
                "without it.",
                param="timestamp_granularities",
                code="unsupported_value",
            )
        if not alignable:
            assert language is not None
            known = ", ".join(sorted(each.name for each in alignment.LANGUAGES))
            raise APIError(
                400,
                f"Word timestamps are not available for {language.name}: Qwen3-ForcedAligner "
                f"knows {known}. timestamp_granularities[]=segment works for every language.",
                param="timestamp_granularities",
                code="unsupported_language",
            )
        return True

    def check_ready(self) -> None:
        if self.aligner is not None:
            self.aligner.check_ready()

    def cuts(self, request: Request) -> Cuts | None:
        return None

    async def run(self, transcript: Transcript, audio: Audio) -> Transcript:
        slots = asyncio.Semaphore(self.concurrency)
        segments = await all_or_nothing(
            self._align(audio, segment, transcript, slots) for segment in transcript.segments
        )
        words = [word for segment in segments for word in segment.words or ()]
        return dataclasses.replace(transcript, segments=segments, words=words)

    async def _align(
        self, audio: Audio, segment: Segment, transcript: Transcript, slots: asyncio.Semaphore
    ) -> Segment:
        """The segment with its words, running from its first word's start to its last word's
        end: the pause-cut piece included silence the words do not."""
        assert self.aligner is not None  # `needed` said so
        start, end = round(segment.start * RATE), round(segment.end * RATE)
        async with slots:
            words = await self.aligner.align(
                audio.wav(start, end), segment.text, transcript.language, segment.start
            )
        if not words:
            return dataclasses.replace(segment, words=[])
        return dataclasses.replace(segment, start=words[0].start, end=words[-1].end, words=words)
