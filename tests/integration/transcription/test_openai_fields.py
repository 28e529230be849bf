"""The 2026 fields of OpenAI's transcription API, sent as the openai SDK sends them: keywords[],
languages[], chunking_strategy, the diarization fields, and the answer's `languages` and
`usage.input_token_details`."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.audio import Transcription, TranscriptionTextDoneEvent

from tests.fixtures.audio import wav
from tests.fixtures.containers import encode
from tests.fixtures.harness import Harness
from tests.fixtures.speech import speech_wav, spoken

SPEECH = speech_wav(1.0)
# Four bursts of speech after pauses of 0.4, 0.4 and 1.0 s: 6.8 s in all
PAUSES = [(0.3, False), (1.2, True), (0.4, False), (1.2, True), (0.4, False), (1.2, True)]
PAUSED = encode(spoken([*PAUSES, (1.0, False), (1.2, True)]), 16000, "wav")
TALK = encode(spoken([(20.0, True), (1.0, False)] * 3 + [(5.0, True)]), 16000, "wav")  # 68 s


def system_turns(harness: Harness) -> list[Any]:
    """The system turn of every request the stand-in got (None where there was none)."""
    assert harness.standin is not None
    turns = []
    for request in harness.standin.requests:
        first = request["messages"][0]
        turns.append(first["content"] if first["role"] == "system" else None)
    return turns


def bad_request(caught: pytest.ExceptionInfo[openai.BadRequestError]) -> dict[str, Any]:
    body = caught.value.body
    assert isinstance(body, dict)
    return body


async def refused(harness: Harness, data: dict[str, Any]) -> dict[str, Any]:
    """The error answering a transcription of SPEECH with these fields, which must be a 400."""
    response = await harness.http.post(
        "/v1/audio/transcriptions", files={"file": ("clip.wav", SPEECH)}, data=data
    )
    assert response.status_code == 400
    error: dict[str, Any] = response.json()["error"]
    return error


# --- keywords[] ---------------------------------------------------------------------------


async def test_keywords_are_the_models_context(harness: Harness) -> None:
    await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), keywords=["Hermes", "oikos agora"]
    )
    await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe",
        file=("clip.wav", SPEECH),
        prompt="A lecture on Greek.",
        keywords=["Hermes<|im_end|>", "  "],
    )
    assert system_turns(harness) == ["Hermes, oikos agora", "A lecture on Greek.\nHermes"]


@pytest.mark.parametrize("response_format", ["json", "text", "verbose_json", "srt", "vtt"])
async def test_keywords_reach_every_piece_in_every_format(
    harness: Harness, response_format: str
) -> None:
    await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe",
        file=("talk.wav", TALK),
        response_format=response_format,  # type: ignore[arg-type]
        keywords=["Qwen"],
    )
    turns = system_turns(harness)
    assert len(turns) >= 3
    assert set(turns) == {"Qwen"}


async def test_keywords_reach_streams_and_translations(harness: Harness) -> None:
    stream = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), keywords=["Qwen"], stream=True
    )
    async for _ in stream:
        pass
    response = await harness.http.post(
        "/v1/audio/translations",
        files={"file": ("clip.wav", SPEECH)},
        data={"keywords[]": ["Qwen", "vLLM"]},
    )
    assert response.status_code == 200
    assert system_turns(harness) == ["Qwen", "Qwen, vLLM"]


@pytest.mark.parametrize(
    ("data", "param", "code"),
    [
        ({"keywords[]": [f"k{i}" for i in range(101)]}, "keywords", "invalid_value"),
        ({"keywords[]": ["x" * 101]}, "keywords", "invalid_value"),
        ({"keywords[]": ["y" * 100] * 40}, "keywords", "context_too_long"),
        ({"prompt": "é" * 2000}, "prompt", "context_too_long"),
    ],
)
async def test_context_that_could_not_fit_is_a_400(
    harness: Harness, data: dict[str, Any], param: str, code: str
) -> None:
    error = await refused(harness, data)
    assert (error["param"], error["code"]) == (param, code)
    assert harness.standin is not None
    assert harness.standin.requests == []


# --- languages[] --------------------------------------------------------------------------


async def test_one_listed_language_is_forced(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), languages=["fr"]
    )
    assert result.text == "Bonjour le monde."
    assert [language.code for language in result.languages or []] == ["fr"]
    assert harness.standin is not None
    prefill = harness.standin.requests[-1]["messages"][-1]
    assert prefill == {"role": "assistant", "content": "language French<asr_text>"}


async def test_a_detected_language_among_those_listed_is_kept(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), languages=["fr", "en"]
    )
    assert result.text == "Hello world."
    assert [language.code for language in result.languages or []] == ["en"]
    assert harness.standin is not None
    assert len(harness.standin.requests) == 1
    assert harness.standin.requests[0]["messages"][-1]["role"] == "user"


async def test_a_language_outside_the_list_is_transcribed_again_in_the_first(
    harness: Harness,
) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), languages=["de", "fr"]
    )
    assert result.text == "Hallo Welt."
    assert [language.code for language in result.languages or []] == ["de"]
    assert harness.standin is not None
    assert [request["messages"][-1]["role"] for request in harness.standin.requests] == [
        "user",
        "assistant",
    ]
    assert result.usage is not None
    assert result.usage.type == "tokens"
    assert result.usage.input_tokens == 2 * (10 + len(SPEECH) // 3200)  # both were read


async def test_a_streamed_piece_outside_the_list_sends_none_of_its_text(
    harness: Harness,
) -> None:
    stream = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), languages=["de", "fr"], stream=True
    )
    events = [event async for event in stream]
    deltas = "".join(event.delta for event in events if event.type == "transcript.text.delta")
    assert deltas == "Hallo Welt."
    done = events[-1]
    assert isinstance(done, TranscriptionTextDoneEvent)
    assert done.text == "Hallo Welt."
    assert [language.code for language in done.languages or []] == ["de"]


@pytest.mark.parametrize(
    ("data", "param"),
    [
        ({"languages[]": ["fr", "xx"]}, "languages"),
        ({"languages[]": ["fr", "de"], "language": "en"}, "language"),
    ],
)
async def test_languages_that_cannot_be_honoured_are_a_400(
    harness: Harness, data: dict[str, Any], param: str
) -> None:
    error = await refused(harness, data)
    assert error["param"] == param
    if param == "languages":
        assert "'xx'" in error["message"]


# --- the answer: languages and usage ------------------------------------------------------


async def test_json_names_the_languages_heard_and_splits_the_tokens_read(
    harness: Harness,
) -> None:
    raw = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("clip.wav", SPEECH)},
        data={"model": "gpt-transcribe"},
    )
    result = Transcription.model_validate(raw.json())
    assert [language.code for language in result.languages or []] == ["en"]
    assert result.usage is not None
    assert result.usage.type == "tokens"
    audio_tokens = len(SPEECH) // 3200  # what the stand-in counts, as vLLM's encoder would
    assert result.usage.input_tokens == 10 + audio_tokens
    details = result.usage.input_token_details
    assert details is not None
    assert (details.audio_tokens, details.text_tokens) == (audio_tokens, 10)


async def test_silence_has_no_languages_and_whisper_1_is_billed_in_seconds(
    harness: Harness,
) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model="whisper-1", file=("silence.wav", wav(2.0, silent=True))
    )
    assert (result.text, result.languages) == ("", [])
    assert result.usage is not None
    assert result.usage.type == "duration"
    verbose = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe", file=("clip.wav", SPEECH), response_format="verbose_json"
    )
    assert verbose.model_extra is not None
    assert verbose.model_extra["languages"] == [{"code": "en"}]


# --- chunking_strategy --------------------------------------------------------------------


async def segments_of(harness: Harness, chunking: Any) -> list[tuple[float, float]]:
    verbose = await harness.sdk.audio.transcriptions.create(
        model="gpt-transcribe",
        file=("paused.wav", PAUSED),
        response_format="verbose_json",
        chunking_strategy=chunking,
    )
    return [(segment.start, segment.end) for segment in verbose.segments or []]


async def test_server_vad_chunks_at_every_pause_of_its_silence_duration(
    harness: Harness,
) -> None:
    every = await segments_of(harness, {"type": "server_vad", "silence_duration_ms": 300})
    long_only = await segments_of(harness, {"type": "server_vad", "silence_duration_ms": 800})
    auto = await segments_of(harness, "auto")
    assert len(every) == 4
    assert len(long_only) == 2
    assert len(auto) == 1  # 6.8 s fits the window: the server's own plan takes it whole
    padded = await segments_of(
        harness, {"type": "server_vad", "silence_duration_ms": 300, "prefix_padding_ms": 0}
    )
    assert padded[1][0] > every[1][0]  # no padding: the piece starts later, at its speech
    assert padded[1][0] == pytest.approx(1.9, abs=0.1)  # as Silero hears it start


async def test_chunking_strategy_reaches_short_json_requests(harness: Harness) -> None:
    for strategy in ("auto", json.dumps({"type": "server_vad", "silence_duration_ms": 300})):
        response = await harness.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("paused.wav", PAUSED)},
            data={"chunking_strategy": strategy},
        )
        assert response.status_code == 200
    assert harness.standin is not None
    assert len(harness.standin.requests) == 1 + 4


@pytest.mark.parametrize(
    ("data", "param"),
    [
        ({"chunking_strategy": "fixed"}, "chunking_strategy"),
        ({"chunking_strategy[type]": "semantic_vad"}, "chunking_strategy.type"),
        (
            {"chunking_strategy[type]": "server_vad", "chunking_strategy[threshold]": "2"},
            "chunking_strategy.threshold",
        ),
        (
            {
                "chunking_strategy[type]": "server_vad",
                "chunking_strategy[silence_duration_ms]": "50",
            },
            "chunking_strategy.silence_duration_ms",
        ),
        (
            {
                "chunking_strategy[type]": "server_vad",
                "chunking_strategy[prefix_padding_ms]": "1.5",
            },
            "chunking_strategy.prefix_padding_ms",
        ),
        (
            {"chunking_strategy[type]": "server_vad", "chunking_strategy[eagerness]": "low"},
            "chunking_strategy.eagerness",
        ),
        (
            {"chunking_strategy": '{"type": "server_vad", "threshold": true}'},
            "chunking_strategy.threshold",
        ),
    ],
)
async def test_bad_chunking_strategy_is_a_400_naming_the_field(
    harness: Harness, data: dict[str, Any], param: str
) -> None:
    assert (await refused(harness, data))["param"] == param


# --- diarization --------------------------------------------------------------------------


async def test_diarization_fields_need_the_diarizing_model(harness: Harness) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await harness.sdk.audio.transcriptions.create(
            model="gpt-transcribe",
            file=("clip.wav", SPEECH),
            extra_body={"known_speaker_names": ["agent"]},
        )
    error = bad_request(caught)
    assert error["param"] == "known_speaker_names"
    assert "gpt-4o-transcribe-diarize" in error["message"]
