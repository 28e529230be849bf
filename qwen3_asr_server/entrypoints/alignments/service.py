"""A given text timed in its recording by Qwen3-ForcedAligner.

A recording that fits the aligner's window (alignment.MAX_SECONDS) is aligned in one pass,
without the ASR model. A longer one is cut at pauses as transcription cuts it (`pieces.plan`,
pieces no longer than the window), the pieces transcribed, and the text shared among them by
their transcripts (`sharing`); each piece is then aligned with its share, concurrently.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from ...backend.aligner import Aligner
from ...errors import APIError
from ...model import alignment
from ...model.languages import Language
from ...speech.audio import RATE, Audio
from ...transcription import pieces
from ...transcription.progress import Progress
from ...transcription.service import TranscriptionService
from ...transcription.transcript import Segment, Transcript
from . import answers, sharing

NO_ALIGNER = (
    "Alignments need Qwen3-ForcedAligner, which this server was not started with: start it "
    "with --aligner Qwen/Qwen3-ForcedAligner-0.6B (or --aligner-url pointing at a vLLM that "
    "serves it)."
)


@dataclasses.dataclass(frozen=True)
class _Share:
    """A stretch of the recording (seconds) and the part of the text said in it."""

    start: float
    end: float
    text: str


class Alignments:
    def __init__(self, transcription: TranscriptionService, aligner: Aligner | None) -> None:
        self.transcription = transcription  # its ASR transcribes a long recording's pieces
        self.aligner = aligner  # None: the server runs no aligner

    def check_ready(self) -> Aligner:
        """The aligner, ready: a 400 naming --aligner when the server runs none, a 503 while
        it loads."""
        if self.aligner is None:
            raise APIError(400, NO_ALIGNER, param=None, code="unsupported_value")
        self.aligner.check_ready()
        return self.aligner

    async def align(
        self, recording: Audio, text: str, language: Language | None, request_id: str
    ) -> Transcript:
        """The text's words with their times: a segment per pass, running from its first
        word's start to its last word's end."""
        aligner = self.check_ready()
        given = await asyncio.to_thread(alignment.units, text, language)  # a client's text
        _fits(len(given), [recording.duration], "recording")
        heard: Language | None = None
        if recording.duration <= alignment.MAX_SECONDS:
            shared = [_Share(0.0, recording.duration, text)]
        else:
            self.transcription.upstream.check_ready()  # the ASR model hears the pieces
            shared, heard = await self._shared(recording, text, language, request_id)
        slots = asyncio.Semaphore(self.transcription.settings.segment_concurrency)
        segments = await pieces.all_or_nothing(
            _aligned(aligner, recording, share, language, slots) for share in shared
        )
        timed = [segment for segment in segments if segment.words]
        words = [word for segment in timed for word in segment.words or ()]
        self.transcription.metrics.aligned(recording.duration, answers.placed(words))
        spoken = language or heard
        return Transcript(
            text=text,
            language=spoken,
            duration=recording.duration,
            segments=timed,
            logprobs=[],
            words=words,
            spoken=(spoken,) if spoken else (),
        )

    async def _shared(
        self, recording: Audio, text: str, language: Language | None, request_id: str
    ) -> tuple[list[_Share], Language | None]:
        """The recording's pieces, each with its share of the text; and the language heard."""
        service = self.transcription
        options = service.options(language=language, context=None, logprobs=False, timed=True)
        options = dataclasses.replace(options, window=min(options.window, alignment.MAX_SECONDS))
        spans = await service.plan(recording, options)
        progress = Progress(service.metrics, request_id, len(spans), recording.duration)
        heard = await pieces.transcribe(
            service.upstream, recording, spans, options, request_id, progress
        )
        said = language or heard.language
        # every piece of speech, heard or not: what the model missed (singing, a mumble)
        # may be where the text's words are, and its room counts
        stretches = [span.seconds(RATE) for span in spans]
        texts = {segment.start: segment.text for segment in heard.segments}
        lengths = [end - start for start, end in stretches]
        given, ranges = await asyncio.to_thread(_matched, text, said, texts, stretches, lengths)
        return _cut(text, given, stretches, ranges), heard.language


def _matched(
    text: str,
    said: Language | None,
    texts: dict[float, str],
    stretches: Sequence[tuple[float, float]],
    lengths: Sequence[float],
) -> tuple[list[alignment.Unit], list[range]]:
    """The text's units, and the range of them each stretch is given (`sharing.shares`), from
    what was heard in each (`texts`, by start): a client's text read in a thread."""
    given = alignment.units(text, said)
    found = [alignment.units(texts.get(start, ""), said) for start, _ in stretches]
    _fits(len(given), lengths, "speech in the recording")
    return given, sharing.shares(given, found, lengths)


def _fits(count: int, seconds: Sequence[float], what: str) -> None:
    """A 400 for a text of `count` units that these stretches of audio have no room for (see
    `sharing.room`): too long for the aligner, or a text for some other recording."""
    most = sum(sharing.room(each) for each in seconds)
    if count > most:
        raise APIError(
            400,
            f"The 'text' has {count} words to align, more than the {what} has room for: "
            f"{most} ({sharing.UNITS_PER_SECOND} a second of audio, at least "
            f"{sharing.MIN_UNITS} a pass). Send the text said in this recording.",
            param="text",
            code="text_too_long",
        )


def _cut(
    text: str,
    given: Sequence[alignment.Unit],
    stretches: Sequence[tuple[float, float]],
    ranges: Sequence[range],
) -> list[_Share]:
    """Each piece's share of `text`: from its first unit to the next share's first (what lies
    between, punctuation, goes with the words before it; the first share starts the text)."""
    kept = [(piece, found) for piece, found in zip(stretches, ranges, strict=True) if found]
    starts = [0] + [given[found.start].first for _, found in kept[1:]] + [len(text)]
    return [
        _Share(start, end, text[starts[k] : starts[k + 1]].strip())
        for k, ((start, end), _) in enumerate(kept)
    ]


async def _aligned(
    aligner: Aligner,
    recording: Audio,
    share: _Share,
    language: Language | None,
    slots: asyncio.Semaphore,
) -> Segment:
    wav = recording.wav(round(share.start * RATE), round(share.end * RATE))
    async with slots:
        words = await aligner.align(wav, share.text, language, share.start)
    start, end = (words[0].start, words[-1].end) if words else (share.start, share.end)
    return Segment(start, end, share.text, [], 0.0, [], words=words)
