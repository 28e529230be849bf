"""The audio routes' form as its request model: read from a form (the multipart values, as
the route gets them) into typed values, or refused with the error the client gets."""

from __future__ import annotations

import base64
import dataclasses
import io
from typing import Any

import pytest
from starlette.datastructures import FormData, UploadFile

from qwen3_asr_server.entrypoints.audio import protocol as form
from qwen3_asr_server.entrypoints.audio.protocol import (
    AudioRequest,
    TranscriptionRequest,
    TranslationRequest,
)
from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model import languages
from qwen3_asr_server.model.catalog import DIARIZE, Catalog
from qwen3_asr_server.speakers.count import SpeakerCount
from qwen3_asr_server.speech.segmentation import Chunking
from qwen3_asr_server.transcription.formats import FORMATS
from qwen3_asr_server.transcription.request import Encoded, Request
from tests.fixtures.audio import wav

POLICY = Policy(Catalog("qwen3-asr", ["whisper-1", "gpt-4o-transcribe"], 0), 400, 1000)


def upload(size: int = 10) -> UploadFile:
    return UploadFile(io.BytesIO(b"x" * size), size=size, filename="a.wav")


def read(*items: tuple[str, Any], model: type[AudioRequest] = TranscriptionRequest) -> Any:
    return form.read(FormData([("file", upload()), *items]), model, POLICY)


def read_core(*items: tuple[str, Any], model: type[AudioRequest] = TranscriptionRequest) -> Request:
    """The form as the route gives it to the transcription service."""
    return read(*items, model=model).transcription()


def refused(*items: tuple[str, Any], model: type[AudioRequest] = TranscriptionRequest) -> APIError:
    with pytest.raises(APIError) as caught:
        read(*items, model=model)
    return caught.value


def test_defaults_are_openais() -> None:
    request = read()
    assert request.response_format is FORMATS["json"]
    assert (request.model, request.prompt, request.temperature, request.stream) == (
        None,
        None,
        0.0,
        False,
    )
    assert (request.forced, request.candidates, request.context, request.chunking) == (
        None,
        (),
        None,
        None,
    )
    assert not request.logprobs
    assert not request.words
    assert request.usage_in_seconds
    assert request.task == "transcribe"


def test_typed_values_from_the_forms_text() -> None:
    request = read(
        ("model", "gpt-4o-transcribe"),
        ("response_format", "verbose_json"),
        ("temperature", " 0.5 "),
        ("language", "French"),
        ("prompt", "A talk."),
        ("keywords[]", "Qwen"),
        ("keywords", "vLLM"),
        ("timestamp_granularities[]", "segment"),
    )
    assert request.response_format is FORMATS["verbose_json"]
    assert request.temperature == 0.5
    assert request.forced == languages.resolve("fr")
    assert request.context == "A talk.\nQwen, vLLM"
    assert request.timestamp_granularities == frozenset({"segment"})
    assert not request.usage_in_seconds  # gpt-* models count tokens


def test_several_languages_are_candidates_and_one_is_forced() -> None:
    several = read(("languages[]", "fr"), ("languages[]", "de"))
    assert (several.forced, [each.code for each in several.candidates]) == (None, ["fr", "de"])
    one = read(("languages[]", "de"))
    assert (one.forced, one.candidates) == (languages.resolve("de"), ())
    error = refused(("languages[]", "fr"), ("languages[]", "de"), ("language", "en"))
    assert (error.param, error.code) == ("language", "invalid_value")


def test_chunking_strategy_in_each_spelling() -> None:
    assert read(("chunking_strategy", "auto")).chunking == Chunking()
    parts = read(("chunking_strategy[type]", "server_vad"), ("chunking_strategy[threshold]", "0.3"))
    assert parts.chunking == Chunking.server_vad(threshold=0.3)
    whole = read(("chunking_strategy", '{"type": "server_vad", "silence_duration_ms": 800}'))
    assert whole.chunking == Chunking.server_vad(silence_duration_ms=800)
    both = refused(("chunking_strategy", "auto"), ("chunking_strategy[type]", "server_vad"))
    assert both.param == "chunking_strategy"
    unknown = refused(("chunking_strategy[type]", "server_vad"), ("chunking_strategy[x]", "1"))
    assert (unknown.param, unknown.code) == ("chunking_strategy.x", "unknown_parameter")
    missing = refused(("chunking_strategy[threshold]", "0.3"))
    assert (missing.param, missing.code) == (
        "chunking_strategy.type",
        "missing_required_parameter",
    )


def test_the_last_value_of_a_field_counts_and_an_empty_one_is_left_out() -> None:
    assert read(("model", "nope"), ("model", "whisper-1")).model == "whisper-1"
    assert read(("language", "  ")).forced is None
    assert read(("response_format", "")).response_format is FORMATS["json"]


@pytest.mark.parametrize(
    ("items", "param", "code"),
    [
        ((("response_format", "mp3"),), "response_format", "invalid_value"),
        ((("response_format", "diarized_json"),), "response_format", "unsupported_value"),
        ((("temperature", "1.5"),), "temperature", "invalid_value"),
        ((("temperature", "warm"),), "temperature", "invalid_value"),
        ((("stream", "yes"),), "stream", "invalid_value"),
        ((("stream", "true"), ("response_format", "srt")), "stream", "unsupported_value"),
        ((("include[]", "logprob"),), "include", "invalid_value"),
        ((("include[]", "logprobs"), ("response_format", "text")), "include", "unsupported_value"),
        ((("timestamp_granularities[]", "word"),), "timestamp_granularities", "unsupported_value"),
        ((("language", "klingon"),), "language", "unsupported_language"),
        ((("keywords[]", "k" * 101),), "keywords", "invalid_value"),
        ((("keywords[]", "y" * 100),) * 5, "keywords", "context_too_long"),
        ((("prompt", "é" * 300),), "prompt", "context_too_long"),
        ((("model", "gpt-9"),), "model", "model_not_found"),
        ((("known_speaker_names[]", "agent"),), "known_speaker_names", "unsupported_value"),
        ((("prompt", upload()),), "prompt", "invalid_type"),
    ],
)
def test_each_bad_field_is_a_400_naming_it(
    items: tuple[tuple[str, Any], ...], param: str, code: str
) -> None:
    error = refused(*items)
    assert (error.param, error.code) == (param, code)
    assert error.status == (404 if code == "model_not_found" else 400)


def test_the_file_is_checked_first_and_last() -> None:
    for items, code in (([], "missing_file"), ([("file", "text")], "invalid_value")):
        with pytest.raises(APIError) as caught:
            form.read(FormData([*items, ("language", "klingon")]), TranscriptionRequest, POLICY)
        assert (caught.value.param, caught.value.code) == ("file", code)
    for size, status, code in ((0, 400, "empty_file"), (1001, 413, "file_too_large")):
        with pytest.raises(APIError) as caught:
            form.read(FormData([("file", upload(size))]), TranscriptionRequest, POLICY)
        assert (caught.value.status, caught.value.code) == (status, code)


def test_a_translation_takes_no_language_and_does_not_stream() -> None:
    request = read(("language", "klingon"), ("languages[]", "xx"), model=TranslationRequest)
    assert (request.task, request.translation, request.forced) == ("translate", True, None)
    error = refused(("stream", "true"), model=TranslationRequest)
    assert error.param == "stream"


def test_the_core_request_carries_every_field_the_form_read() -> None:
    """What the route gives the service: every option, and the uploaded file unread."""
    voice = "data:audio/wav;base64," + base64.b64encode(wav(3.0)).decode()
    diarizing = Policy(Catalog("qwen3-asr", [], 0, diarizes=True), 400, 1000)
    file = upload()
    fields = [
        ("file", file),
        ("model", DIARIZE),
        ("response_format", "verbose_json"),
        ("languages[]", "fr"),
        ("languages[]", "de"),
        ("prompt", "A talk."),
        ("keywords[]", "Qwen"),
        ("temperature", "0.3"),
        ("timestamp_granularities[]", "word"),
        ("timestamp_granularities[]", "segment"),
        ("chunking_strategy[type]", "server_vad"),
        ("chunking_strategy[threshold]", "0.3"),
        ("known_speaker_names[]", "agent"),
        ("known_speaker_references[]", voice),
        ("min_speakers", "2"),
        ("max_speakers", "3"),
    ]
    asked = form.read(FormData(fields), TranscriptionRequest, diarizing)
    core = asked.transcription()
    assert dataclasses.replace(core, known=()) == Request(
        audio=Encoded(file.file, 10),
        response_format=FORMATS["verbose_json"],
        task="transcribe",
        forced=None,
        candidates=(languages.resolve("fr"), languages.resolve("de")),
        context="A talk.\nQwen",
        temperature=0.3,
        timestamp_granularities=frozenset({"word", "segment"}),
        chunking=Chunking.server_vad(threshold=0.3),
        diarize=True,
        speakers=SpeakerCount(2, 3),
        usage_in_seconds=False,  # gpt-4o-transcribe-diarize counts tokens
    )
    assert core.words
    assert [(each.name, each.voice.duration) for each in core.known] == [("agent", 3.0)]
    assert core.known is asked.known
    forced = read_core(("language", "fr"), ("include[]", "logprobs"))
    assert (forced.forced, forced.logprobs, forced.usage_in_seconds) == (
        languages.resolve("fr"),
        True,
        True,
    )
    translated = read_core(model=TranslationRequest)
    assert (translated.task, translated.translation) == ("translate", True)
    split = read_core(("multichannel", "true"), ("known_speaker_names[]", "agent"))
    assert (split.multichannel, split.channel_names, split.known) == (True, ("agent",), ())
    # every field is carried by one of these, else it would go unchecked at its default
    carried = (core, forced, translated, split)
    for field in dataclasses.fields(Request):
        assert any(getattr(each, field.name) != field.default for each in carried), field.name
