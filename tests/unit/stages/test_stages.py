"""The stages after transcription: which a request needs, what each adds to the transcript,
in what order they run, and what they ask of the plan."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import numpy as np
import pytest
from starlette.datastructures import FormData, UploadFile

from qwen3_asr_server.entrypoints.audio import protocol as form
from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model import alignment
from qwen3_asr_server.model.alignment import Word
from qwen3_asr_server.model.catalog import Catalog
from qwen3_asr_server.model.languages import Language, resolve
from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.speech.audio import RATE, Audio
from qwen3_asr_server.stages import registry
from qwen3_asr_server.stages.speakers import SpeakerAttribution
from qwen3_asr_server.stages.words import WordAlignment
from qwen3_asr_server.transcription import stage
from qwen3_asr_server.transcription.request import Request
from qwen3_asr_server.transcription.service import TranscriptionService
from qwen3_asr_server.transcription.transcript import Segment, Transcript

POLICY = Policy(Catalog("qwen3-asr", [], 0), 400, 1000)
AUDIO = Audio(np.zeros(4 * RATE, dtype=np.int16))


class FakeAligner:
    """Times each word of a segment 0.2 s apart from where its audio starts; records calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, Language | None, float]] = []
        self.ready = True

    def check_ready(self) -> None:
        if not self.ready:
            raise APIError(503, "The aligner is still loading; retry shortly.")

    async def align(
        self, wav: bytes, text: str, language: Language | None, offset: float
    ) -> list[Word]:
        self.calls.append((len(wav), text, language, offset))
        found = alignment.units(text, language)
        return [
            Word(unit.text, offset + 0.2 * i + 0.1, offset + 0.2 * i + 0.2, unit.first, unit.last)
            for i, unit in enumerate(found)
        ]


def request(*items: tuple[str, Any]) -> Request:
    """The core's request, as the audio route makes it of these form fields."""
    upload = UploadFile(io.BytesIO(b"x"), size=1, filename="a.wav")
    read = form.read(FormData([("file", upload), *items]), form.TranscriptionRequest, POLICY)
    return read.transcription()


def transcript(*texts: str) -> Transcript:
    segments = [Segment(float(i), i + 0.9, text, [], 0.0, []) for i, text in enumerate(texts)]
    english = resolve("en")
    return Transcript(" ".join(texts), english, 4.0, segments, [], spoken=(english,))


WORDS = ("timestamp_granularities[]", "word")
VERBOSE = ("response_format", "verbose_json")


def test_word_times_are_needed_when_asked_for_or_when_subtitles_prefer_them() -> None:
    with_aligner = WordAlignment(FakeAligner(), 2)
    without = WordAlignment(None, 2)
    assert with_aligner.needed(request(VERBOSE, WORDS))
    assert with_aligner.needed(request(("response_format", "srt")))
    assert not without.needed(request(("response_format", "srt")))
    assert not with_aligner.needed(request(VERBOSE))
    assert not with_aligner.needed(request(("response_format", "vtt"), ("language", "nl")))


def test_word_times_that_cannot_be_had_are_a_400() -> None:
    with pytest.raises(APIError) as caught:
        WordAlignment(None, 2).needed(request(VERBOSE, WORDS))
    assert (caught.value.param, caught.value.code) == (
        "timestamp_granularities",
        "unsupported_value",
    )
    assert "--aligner" in caught.value.message
    with pytest.raises(APIError) as caught:
        WordAlignment(FakeAligner(), 2).needed(request(VERBOSE, WORDS, ("language", "nl")))
    assert caught.value.code == "unsupported_language"
    assert "Dutch" in caught.value.message
    assert "English" in caught.value.message


async def test_alignment_gives_every_segment_its_words_and_the_transcript_all_of_them() -> None:
    aligner = FakeAligner()
    before = transcript("Hello world.", "Good night.")
    after = await WordAlignment(aligner, 2).run(before, AUDIO)
    assert [word.word for word in after.words or []] == ["Hello", "world", "Good", "night"]
    first, second = after.segments
    assert [word.word for word in first.words or []] == ["Hello", "world"]
    # each segment now runs from its first word's start to its last word's end
    assert (first.start, first.end) == (0.1, 0.4)
    assert (second.start, second.end) == pytest.approx((1.1, 1.4))
    assert [call[1:] for call in aligner.calls] == [
        ("Hello world.", resolve("en"), 0.0),
        ("Good night.", resolve("en"), 1.0),
    ]
    assert aligner.calls[0][0] == 44 + 2 * round(0.9 * RATE)  # the segment's audio, as a WAV
    assert dataclasses.replace(after, segments=before.segments, words=None) == before


async def test_a_segment_with_no_word_keeps_its_times() -> None:
    after = await WordAlignment(FakeAligner(), 2).run(transcript("..."), AUDIO)
    assert after.segments[0].words == []
    assert (after.segments[0].start, after.segments[0].end) == (0.0, 0.9)


class Marking:
    """A stage that adds its name to the transcript's text: the order they ran in."""

    provides = frozenset({"text"})
    max_seconds = None

    def __init__(self, name: str, wanted: bool = True) -> None:
        self.name = name
        self.wanted = wanted

    def needed(self, request: Any) -> bool:
        return self.wanted

    def check_ready(self) -> None:
        pass

    async def run(self, transcript: Transcript, audio: Audio) -> Transcript:
        return dataclasses.replace(transcript, text=f"{transcript.text}+{self.name}")


async def test_the_stages_a_request_needs_run_in_their_order() -> None:
    stages = [Marking("a"), Marking("b", wanted=False), Marking("c")]
    needed = stage.needed(stages, request())
    assert [each.name for each in needed] == ["a", "c"]
    after = await stage.run(needed, transcript("x"), AUDIO)
    assert after.text == "x+a+c"


def test_the_registry_and_what_a_stage_asks_of_the_plan() -> None:
    settings = Settings(model="m", segment_seconds=200.0, segment_concurrency=3)
    stages = registry.every(settings, None, lambda: None, None)
    assert [type(each) for each in stages] == [WordAlignment, SpeakerAttribution]
    assert stages[0].concurrency == 3
    service = TranscriptionService(settings, None, stages, lambda: None, None, None)
    language = resolve("fr")
    plain = service.options(language=language, context=None, logprobs=False)
    assert (plain.window, plain.concurrency, plain.language) == (200.0, 3, language)
    aligned = service.options(language=None, context=None, logprobs=False, stages=stages)
    assert aligned.window == alignment.MAX_SECONDS  # each piece is aligned in one pass
