"""The format registry: one entry per response_format, each rendering a transcript the way
OpenAI's API shapes it (checked against the openai package's own types)."""

from __future__ import annotations

import dataclasses
import io
import typing
from typing import Any

from openai.types import AudioResponseFormat
from openai.types.audio import Transcription, TranscriptionDiarized, TranscriptionVerbose
from starlette.datastructures import FormData, UploadFile

from qwen3_asr_server.entrypoints.audio import protocol as form
from qwen3_asr_server.entrypoints.audio.protocol import (
    AudioRequest,
    TranscriptionRequest,
    TranslationRequest,
)
from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.model.alignment import Word
from qwen3_asr_server.model.catalog import DIARIZE, Catalog
from qwen3_asr_server.model.languages import resolve
from qwen3_asr_server.transcription import formats
from qwen3_asr_server.transcription import request as core
from qwen3_asr_server.transcription.formats import FORMATS, JSON
from qwen3_asr_server.transcription.request import Words
from qwen3_asr_server.transcription.transcript import Segment, Transcript
from qwen3_asr_server.transcription.usage import Tokens

POLICY = Policy(Catalog("qwen3-asr", ["whisper-1", "gpt-4o-transcribe"], 0, True), 400, 1000)
ENGLISH = resolve("en")
WORDS = [Word("Hello", 0.1, 0.5, 0, 5), Word("world", 0.6, 1.0, 6, 11)]
TRANSCRIPT = Transcript(
    text="Hello world.",
    language=ENGLISH,
    duration=1.5,
    segments=[Segment(0.1, 1.0, "Hello world.", [1, 2], -0.2, [], words=WORDS)],
    logprobs=[{"token": "Hello", "logprob": -0.1, "bytes": list(b"Hello")}],
    tokens=Tokens(input=30, output=4, audio=20),
    words=WORDS,
    spoken=(ENGLISH,),
)


def request(
    *items: tuple[str, Any], model: type[AudioRequest] = TranscriptionRequest
) -> core.Request:
    """The core's request, as the audio route makes it of these form fields."""
    upload = UploadFile(io.BytesIO(b"x"), size=1, filename="a.wav")
    return form.read(FormData([("file", upload), *items]), model, POLICY).transcription()


def rendered(name: str, *items: tuple[str, Any], **kind: Any) -> Any:
    asked = request(("response_format", name), *items, **kind)
    return asked.response_format.render(TRANSCRIPT, asked)


def diarized(name: str, *items: tuple[str, Any]) -> Any:
    """`name` of TRANSCRIPT as the diarizer labels it: speaker "A" says it all."""
    asked = request(("response_format", name), ("model", DIARIZE), *items)
    words = [dataclasses.replace(word, speaker="A") for word in WORDS]
    segments = [dataclasses.replace(TRANSCRIPT.segments[0], speaker="A", words=words)]
    labelled = dataclasses.replace(TRANSCRIPT, segments=segments, words=words)
    return asked.response_format.render(labelled, asked)


def test_every_format_renders_what_its_content_type_says() -> None:
    for name, entry in FORMATS.items():
        body = diarized(name) if entry.speakers else rendered(name)
        assert isinstance(body, dict) == (entry.content_type == JSON), name
        if isinstance(body, str):
            assert body.endswith("\n")


def test_json_is_openais_transcription() -> None:
    body = rendered("json", ("model", "gpt-4o-transcribe"), ("include[]", "logprobs"))
    parsed = Transcription.model_validate(body)
    assert parsed.text == "Hello world."
    assert parsed.usage is not None
    assert parsed.usage.type == "tokens"
    assert [entry.token for entry in parsed.logprobs or []] == ["Hello"]
    assert body["languages"] == [{"code": "en"}]
    assert rendered("json", ("model", "whisper-1"))["usage"] == {"type": "duration", "seconds": 1.5}


def test_verbose_json_is_openais_with_segments_and_words() -> None:
    body = rendered("verbose_json", ("timestamp_granularities[]", "segment"))
    parsed = TranscriptionVerbose.model_validate(body)
    assert (parsed.language, parsed.duration, parsed.text) == ("english", 1.5, "Hello world.")
    assert [(each.start, each.end) for each in parsed.segments or []] == [(0.1, 1.0)]
    assert [word.word for word in parsed.words or []] == ["Hello", "world"]
    only_words = rendered("verbose_json", ("timestamp_granularities[]", "word"))
    assert "segments" not in only_words


def test_subtitles_cut_cues_at_sentence_ends_from_word_times() -> None:
    assert rendered("srt") == "1\n00:00:00,100 --> 00:00:01,000\nHello world.\n\n"
    assert rendered("vtt").startswith("WEBVTT\n\n00:00:00.100 --> 00:00:01.000\nHello world.")
    assert rendered("text") == "Hello world.\n"


def test_a_translation_says_it_is_a_transcript() -> None:
    body = rendered("json", model=TranslationRequest)
    assert body["_note"].startswith("Qwen3-ASR does not translate")
    assert "(English)" in body["_note"]
    assert "_note" not in rendered("json")


def test_diarized_json_is_openais_with_speakers() -> None:
    parsed = TranscriptionDiarized.model_validate(diarized("diarized_json"))
    assert parsed.segments[0].model_dump() == {
        "id": "seg_0",
        "start": 0.1,
        "end": 1.0,
        "speaker": "A",
        "text": "Hello world.",
        "type": "transcript.text.segment",
    }
    assert (parsed.task, parsed.duration, parsed.text) == ("transcribe", 1.5, "Hello world.")
    verbose = diarized("verbose_json", ("timestamp_granularities[]", "word"))
    assert [word["speaker"] for word in verbose["words"]] == ["A", "A"]
    segments = diarized("verbose_json")["segments"]
    assert TranscriptionVerbose.model_validate(diarized("verbose_json")).segments
    assert segments[0]["speaker"] == "A"
    assert diarized("srt") == "1\n00:00:00,100 --> 00:00:01,000\n[A] Hello world.\n\n"
    assert "\n<v A>Hello world.</v>\n" in diarized("vtt")


def test_a_vtt_voice_is_escaped() -> None:
    asked = request(("response_format", "vtt"), ("model", DIARIZE))
    segments = [dataclasses.replace(TRANSCRIPT.segments[0], speaker="<b>&", words=None)]
    body = asked.response_format.render(dataclasses.replace(TRANSCRIPT, segments=segments), asked)
    assert "<v &lt;b&gt;&amp;>Hello world.</v>" in body


def test_what_each_entry_declares() -> None:
    assert [name for name, each in FORMATS.items() if each.streams] == ["json", "diarized_json"]
    assert [name for name, each in FORMATS.items() if each.logprobs] == ["json"]
    assert [name for name, each in FORMATS.items() if each.words is Words.ASKED] == ["verbose_json"]
    assert [name for name, each in FORMATS.items() if each.speakers] == ["diarized_json"]
    timed = {name for name, each in FORMATS.items() if each.segments}
    assert timed == {"verbose_json", "diarized_json", "srt", "vtt"}
    cut = {name for name, each in FORMATS.items() if each.unaligned_chunking is not None}
    assert cut == {name for name, each in FORMATS.items() if each.words is Words.PREFERRED}
    assert formats.named(streams=True) == "json, diarized_json"
    assert formats.named(words=Words.PREFERRED) == "srt, vtt"


def test_every_format_openai_names_is_an_entry() -> None:
    assert set(typing.get_args(AudioResponseFormat)) == set(FORMATS)
