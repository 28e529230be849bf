"""Each JSON format's body, key by key as the renderers wrote them before they filled the
response models (`transcription.responses`): the same keys in the same order, absent where they
were absent, the same numbers (1.0 is not 1). The routes send these dicts as they are, so equal
JSON text here is equal bytes on the wire. Each is one of the answers /openapi.json publishes."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import jsonschema
import pytest
from starlette.datastructures import FormData, UploadFile

from qwen3_asr_server.entrypoints.audio import openapi
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
from qwen3_asr_server.transcription.formats import JSON
from qwen3_asr_server.transcription.transcript import Segment, Transcript
from qwen3_asr_server.transcription.usage import Tokens

NOTE = "Qwen3-ASR does not translate: this is the transcript in the spoken language"
POLICY = Policy(Catalog("qwen3-asr", ["whisper-1", "gpt-4o-transcribe"], 0, True), 400, 1000)
ENGLISH, FRENCH = resolve("en"), resolve("fr")
WORDS = [
    Word("Hello", 0.1, 0.5, 0, 5, "A"),
    Word("world.", 0.6, 1.0, 6, 12, "A"),
    Word("Salut.", 2.25, 2.8, 0, 6, "B"),
]
LOGPROBS = [
    {"token": "Hello", "logprob": -0.1, "bytes": list(b"Hello")},
    {"token": " world", "logprob": -0.02, "bytes": list(b" world")},
]
TRANSCRIPT = Transcript(
    text="Hello world. Salut.",
    language=ENGLISH,
    duration=3.1234,
    segments=[
        Segment(0.1, 1.0, "Hello world.", [9707, 1879], -0.123456789, LOGPROBS, WORDS[:2], "A"),
        Segment(2.2512, 2.8, "Salut.", [50], 0.0, [], WORDS[2:], "B"),
    ],
    logprobs=LOGPROBS,
    tokens=Tokens(input=30, output=4, audio=20),
    words=WORDS,
    spoken=(ENGLISH, FRENCH),
)
# no language, speakers, words, nor audio token count
PLAIN = dataclasses.replace(
    TRANSCRIPT,
    language=None,
    segments=[dataclasses.replace(each, speaker=None, words=None) for each in TRANSCRIPT.segments],
    words=None,
    tokens=Tokens(input=7, output=2, audio=None),
    spoken=(),
)

CASES: dict[str, tuple[Transcript, type[AudioRequest], tuple[tuple[str, str], ...], Any]] = {
    "json_seconds": (
        TRANSCRIPT,
        TranscriptionRequest,
        (("model", "whisper-1"),),
        {
            "text": "Hello world. Salut.",
            "languages": [{"code": "en"}, {"code": "fr"}],
            "usage": {"type": "duration", "seconds": 3.123},
        },
    ),
    "json_tokens_logprobs": (
        TRANSCRIPT,
        TranscriptionRequest,
        (("model", "gpt-4o-transcribe"), ("include[]", "logprobs")),
        {
            "text": "Hello world. Salut.",
            "languages": [{"code": "en"}, {"code": "fr"}],
            "usage": {
                "type": "tokens",
                "input_tokens": 30,
                "output_tokens": 4,
                "total_tokens": 34,
                "input_token_details": {"audio_tokens": 20, "text_tokens": 10},
            },
            "logprobs": [
                {"token": "Hello", "logprob": -0.1, "bytes": [72, 101, 108, 108, 111]},
                {"token": " world", "logprob": -0.02, "bytes": [32, 119, 111, 114, 108, 100]},
            ],
        },
    ),
    "json_tokens_unknown_audio": (
        PLAIN,
        TranscriptionRequest,
        (("model", "gpt-4o-transcribe"),),
        {
            "text": "Hello world. Salut.",
            "languages": [],
            "usage": {"type": "tokens", "input_tokens": 7, "output_tokens": 2, "total_tokens": 9},
        },
    ),
    "json_translation": (
        TRANSCRIPT,
        TranslationRequest,
        (),
        {
            "text": "Hello world. Salut.",
            "languages": [{"code": "en"}, {"code": "fr"}],
            "usage": {"type": "duration", "seconds": 3.123},
            "_note": NOTE + " (English).",
        },
    ),
    "json_translation_unknown_language": (
        PLAIN,
        TranslationRequest,
        (),
        {
            "text": "Hello world. Salut.",
            "languages": [],
            "usage": {"type": "duration", "seconds": 3.123},
            "_note": NOTE + ".",
        },
    ),
    "verbose_segments_words_speakers": (
        TRANSCRIPT,
        TranscriptionRequest,
        (
            ("model", DIARIZE),
            ("response_format", "verbose_json"),
            ("timestamp_granularities[]", "word"),
            ("timestamp_granularities[]", "segment"),
            ("temperature", "0.5"),
        ),
        {
            "task": "transcribe",
            "language": "english",
            "duration": 3.123,
            "text": "Hello world. Salut.",
            "languages": [{"code": "en"}, {"code": "fr"}],
            "segments": [
                {
                    "id": 0,
                    "seek": 10,
                    "start": 0.1,
                    "end": 1.0,
                    "text": "Hello world.",
                    "tokens": [9707, 1879],
                    "temperature": 0.5,
                    "avg_logprob": -0.123457,
                    "compression_ratio": 0.6,
                    "no_speech_prob": 0.0,
                    "speaker": "A",
                },
                {
                    "id": 1,
                    "seek": 225,
                    "start": 2.251,
                    "end": 2.8,
                    "text": "Salut.",
                    "tokens": [50],
                    "temperature": 0.5,
                    "avg_logprob": 0.0,
                    "compression_ratio": 0.4286,
                    "no_speech_prob": 0.0,
                    "speaker": "B",
                },
            ],
            "words": [
                {"word": "Hello", "start": 0.1, "end": 0.5, "speaker": "A"},
                {"word": "world.", "start": 0.6, "end": 1.0, "speaker": "A"},
                {"word": "Salut.", "start": 2.25, "end": 2.8, "speaker": "B"},
            ],
            "usage": {"type": "duration", "seconds": 3.123},
        },
    ),
    "verbose_words_only": (
        TRANSCRIPT,
        TranscriptionRequest,
        (("response_format", "verbose_json"), ("timestamp_granularities[]", "word")),
        {
            "task": "transcribe",
            "language": "english",
            "duration": 3.123,
            "text": "Hello world. Salut.",
            "languages": [{"code": "en"}, {"code": "fr"}],
            "words": [
                {"word": "Hello", "start": 0.1, "end": 0.5, "speaker": "A"},
                {"word": "world.", "start": 0.6, "end": 1.0, "speaker": "A"},
                {"word": "Salut.", "start": 2.25, "end": 2.8, "speaker": "B"},
            ],
            "usage": {"type": "duration", "seconds": 3.123},
        },
    ),
    "verbose_plain": (
        PLAIN,
        TranscriptionRequest,
        (("response_format", "verbose_json"),),
        {
            "task": "transcribe",
            "language": "unknown",
            "duration": 3.123,
            "text": "Hello world. Salut.",
            "languages": [],
            "segments": [
                {
                    "id": 0,
                    "seek": 10,
                    "start": 0.1,
                    "end": 1.0,
                    "text": "Hello world.",
                    "tokens": [9707, 1879],
                    "temperature": 0.0,
                    "avg_logprob": -0.123457,
                    "compression_ratio": 0.6,
                    "no_speech_prob": 0.0,
                },
                {
                    "id": 1,
                    "seek": 225,
                    "start": 2.251,
                    "end": 2.8,
                    "text": "Salut.",
                    "tokens": [50],
                    "temperature": 0.0,
                    "avg_logprob": 0.0,
                    "compression_ratio": 0.4286,
                    "no_speech_prob": 0.0,
                },
            ],
            "usage": {"type": "duration", "seconds": 3.123},
        },
    ),
    "verbose_translation": (
        TRANSCRIPT,
        TranslationRequest,
        (("response_format", "verbose_json"), ("timestamp_granularities[]", "word")),
        {
            "task": "translate",
            "language": "english",
            "duration": 3.123,
            "text": "Hello world. Salut.",
            "languages": [{"code": "en"}, {"code": "fr"}],
            "words": [
                {"word": "Hello", "start": 0.1, "end": 0.5, "speaker": "A"},
                {"word": "world.", "start": 0.6, "end": 1.0, "speaker": "A"},
                {"word": "Salut.", "start": 2.25, "end": 2.8, "speaker": "B"},
            ],
            "usage": {"type": "duration", "seconds": 3.123},
            "_note": NOTE + " (English).",
        },
    ),
    "diarized_tokens": (
        TRANSCRIPT,
        TranscriptionRequest,
        (("model", DIARIZE), ("response_format", "diarized_json")),
        {
            "task": "transcribe",
            "duration": 3.123,
            "text": "Hello world. Salut.",
            "segments": [
                {
                    "type": "transcript.text.segment",
                    "id": "seg_0",
                    "start": 0.1,
                    "end": 1.0,
                    "text": "Hello world.",
                    "speaker": "A",
                },
                {
                    "type": "transcript.text.segment",
                    "id": "seg_1",
                    "start": 2.251,
                    "end": 2.8,
                    "text": "Salut.",
                    "speaker": "B",
                },
            ],
            "usage": {
                "type": "tokens",
                "input_tokens": 30,
                "output_tokens": 4,
                "total_tokens": 34,
                "input_token_details": {"audio_tokens": 20, "text_tokens": 10},
            },
        },
    ),
    "diarized_unknown_audio": (
        PLAIN,
        TranscriptionRequest,
        (("model", DIARIZE), ("response_format", "diarized_json")),
        {
            "task": "transcribe",
            "duration": 3.123,
            "text": "Hello world. Salut.",
            "segments": [
                {
                    "type": "transcript.text.segment",
                    "id": "seg_0",
                    "start": 0.1,
                    "end": 1.0,
                    "text": "Hello world.",
                    "speaker": "A",
                },
                {
                    "type": "transcript.text.segment",
                    "id": "seg_1",
                    "start": 2.251,
                    "end": 2.8,
                    "text": "Salut.",
                    "speaker": "A",
                },
            ],
            "usage": {"type": "tokens", "input_tokens": 7, "output_tokens": 2, "total_tokens": 9},
        },
    ),
}


def _text(body: Any) -> str:
    """The body as the routes' JSONResponse writes it."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


@pytest.mark.parametrize("case", CASES)
def test_the_body_is_the_one_sent_before(case: str) -> None:
    transcript, model, items, expected = CASES[case]
    upload = UploadFile(io.BytesIO(b"x"), size=1, filename="a.wav")
    asked = form.read(FormData([("file", upload), *items]), model, POLICY)
    assert _text(asked.response_format.render(transcript, asked)) == _text(expected)


@pytest.mark.parametrize("case", CASES)
def test_the_body_is_one_the_schema_publishes(case: str) -> None:
    _, model, _, expected = CASES[case]
    answer = openapi.operation(model)["responses"]["200"]["content"][JSON]["schema"]
    schema = {**answer, "components": {"schemas": openapi.components()}}
    jsonschema.validate(expected, schema, cls=jsonschema.Draft202012Validator)
