"""The Realtime session configuration: updates in both dialects applied, as OpenAI does."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from openai.types.beta.realtime import (
    TranscriptionSessionUpdate,
)
from openai.types.realtime import (
    RealtimeTranscriptionSessionAudioInputTurnDetection,
    SessionUpdateEvent,
)
from openai.types.realtime.realtime_transcription_session_audio_input_turn_detection import (
    SemanticVad as SemanticVadType,
)
from pydantic import TypeAdapter

from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.entrypoints.realtime import server_events as events
from qwen3_asr_server.entrypoints.realtime.protocol import (
    SEMANTIC_SILENCE_MS,
    SemanticVad,
    ServerVad,
    SessionConfig,
    appended_audio,
    apply_update,
    check,
    handshake,
)
from qwen3_asr_server.errors import APIError, EventError
from qwen3_asr_server.model import languages
from qwen3_asr_server.model.catalog import Catalog

GA = SessionConfig()
TranscriptionSessionTurnDetection = TypeAdapter(RealtimeTranscriptionSessionAudioInputTurnDetection)
BETA = SessionConfig(beta=True)


def ga_update(**audio_input: Any) -> dict[str, Any]:
    event = {
        "type": "session.update",
        "session": {"type": "transcription", "audio": {"input": audio_input}},
    }
    # the test input itself is a valid SDK event, but for 16 kHz: the SDK's type says 24000
    rate = audio_input.get("format", {}).get("rate")
    audio_format = {**audio_input.get("format", {}), "rate": 24000} if rate == 16000 else None
    check = {**audio_input, "format": audio_format} if audio_format else audio_input
    SessionUpdateEvent.model_validate(
        {**event, "session": {"type": "transcription", "audio": {"input": check}}}
    )
    return event


def beta_update(**session: Any) -> dict[str, Any]:
    event = {"type": "transcription_session.update", "session": session}
    TranscriptionSessionUpdate.model_validate(event)
    return event


def test_defaults_are_openais() -> None:
    assert GA.sample_rate == 24000
    assert (GA.language, GA.prompt, GA.model, GA.logprobs, GA.beta) == (
        None,
        "",
        None,
        False,
        False,
    )
    assert GA.turn_detection == ServerVad(0.5, 300, 500)


def test_ga_update() -> None:
    event = ga_update(
        format={"type": "audio/pcm", "rate": 16000},
        transcription={"model": "qwen3-asr", "language": "ja", "prompt": "Tokyo"},
        turn_detection={
            "type": "server_vad",
            "threshold": 0.7,
            "prefix_padding_ms": 200,
            "silence_duration_ms": 800,
            "create_response": True,  # not this server's business: ignored
        },
        noise_reduction={"type": "near_field"},
    )
    event["session"]["include"] = ["item.input_audio_transcription.logprobs"]
    config = apply_update(BETA, event)
    assert config == SessionConfig(
        sample_rate=16000,
        language=languages.resolve("ja"),
        prompt="Tokyo",
        model="qwen3-asr",
        turn_detection=ServerVad(0.7, 200, 800),
        logprobs=True,
        beta=False,
    )


def test_beta_update() -> None:
    event = beta_update(
        input_audio_format="pcm16",
        input_audio_transcription={"model": "gpt-4o-transcribe", "language": "Korean"},
        turn_detection={"type": "server_vad", "silence_duration_ms": 650},
        input_audio_noise_reduction={"type": "far_field"},
    )
    config = apply_update(SessionConfig(sample_rate=16000), event)
    assert config.beta
    assert config.sample_rate == 24000  # beta's pcm16 is 24 kHz
    assert config.language == languages.Language("ko", "Korean")
    assert config.model == "gpt-4o-transcribe"
    assert config.turn_detection == ServerVad(0.5, 300, 650)


def test_partial_updates_keep_everything_else() -> None:
    start = SessionConfig(
        sample_rate=16000,
        language=languages.resolve("fr"),
        prompt="ctx",
        model="m",
        turn_detection=ServerVad(0.6, 100, 900),
        logprobs=True,
    )
    only_threshold = ga_update(turn_detection={"type": "server_vad", "threshold": 0.2})
    assert apply_update(start, only_threshold) == replace(
        start, turn_detection=ServerVad(0.2, 100, 900)
    )
    only_prompt = ga_update(transcription={"prompt": "new"}, format={"type": "audio/pcm"})
    assert apply_update(start, only_prompt) == replace(start, prompt="new")
    empty = {"type": "session.update", "session": {"type": "transcription"}}
    assert apply_update(start, empty) == start
    assert apply_update(start, beta_update()) == replace(start, beta=True)


def test_null_turn_detection_means_manual_commits_and_vad_comes_back_with_defaults() -> None:
    off = apply_update(GA, ga_update(turn_detection=None))
    assert off.turn_detection is None
    assert apply_update(GA, beta_update(turn_detection=None)).turn_detection is None
    on = apply_update(off, ga_update(turn_detection={"type": "server_vad"}))
    assert on.turn_detection == ServerVad()


def test_null_transcription_and_language_reset_to_defaults() -> None:
    start = SessionConfig(language=languages.resolve("fr"), prompt="ctx", model="m")
    assert apply_update(start, ga_update(transcription=None)) == GA
    cleared = apply_update(start, ga_update(transcription={"language": None}))
    assert (cleared.language, cleared.prompt) == (None, "ctx")
    blank = beta_update(input_audio_transcription={"language": "", "prompt": None})
    assert (
        apply_update(start, blank).language,
        apply_update(start, blank).prompt,
    ) == (
        None,
        "",
    )


@pytest.mark.parametrize(("value", "code"), [("fr", "fr"), ("French", "fr"), ("YUE", "yue")])
def test_language_by_code_or_name(value: str, code: str) -> None:
    config = apply_update(GA, ga_update(transcription={"language": value}))
    assert config.language is not None
    assert config.language.code == code
    assert events.session_object(config, "s")["audio"]["input"]["transcription"]["language"] == code


@pytest.mark.parametrize("eagerness", ["low", "medium", "high", "auto", None])
def test_semantic_vad_is_kept_and_echoed_with_its_eagerness(eagerness: str | None) -> None:
    turn_detection: dict[str, Any] = {"type": "semantic_vad"}
    if eagerness:
        turn_detection["eagerness"] = eagerness
    config = apply_update(GA, ga_update(turn_detection=turn_detection))
    assert config.turn_detection == SemanticVad(eagerness or "auto")
    assert config.turn_detection.silence_duration_ms == SEMANTIC_SILENCE_MS[eagerness or "auto"]
    echoed = events.session_object(config, "s")["audio"]["input"]["turn_detection"]
    assert echoed == {"type": "semantic_vad", "eagerness": eagerness or "auto"}
    typed = TranscriptionSessionTurnDetection.validate_python(echoed, strict=True)
    assert isinstance(typed, SemanticVadType)  # OpenAI's own type for it
    beta = apply_update(
        BETA,
        {"type": "transcription_session.update", "session": {"turn_detection": turn_detection}},
    )
    assert events.session_object(beta, "s")["turn_detection"] == echoed


def test_semantic_vad_keeps_its_eagerness_across_updates() -> None:
    low = {"type": "semantic_vad", "eagerness": "low"}
    semantic = apply_update(GA, ga_update(turn_detection=low))
    # an update that leaves eagerness out keeps the session's
    again = apply_update(semantic, ga_update(turn_detection={"type": "semantic_vad"}))
    assert again.turn_detection == SemanticVad("low")
    # back to server VAD: its own defaults, and what the update sets
    server_vad = {"type": "server_vad", "threshold": 0.7}
    server = apply_update(again, ga_update(turn_detection=server_vad))
    assert server.turn_detection == ServerVad(threshold=0.7)


def test_semantic_vad_eagerness_orders_the_silence() -> None:
    assert SEMANTIC_SILENCE_MS["low"] > SEMANTIC_SILENCE_MS["medium"] > SEMANTIC_SILENCE_MS["high"]
    assert SEMANTIC_SILENCE_MS["auto"] == SEMANTIC_SILENCE_MS["medium"]


def test_integral_floats_pass_as_integers() -> None:
    update = ga_update(turn_detection={"type": "server_vad", "silence_duration_ms": 700})
    update["session"]["audio"]["input"]["turn_detection"]["silence_duration_ms"] = 700.0
    vad = apply_update(GA, update).turn_detection
    assert vad is not None
    assert vad.silence_duration_ms == 700
    assert isinstance(vad.silence_duration_ms, int)


V, T = "invalid_value", "invalid_type"
SESSION_REFUSALS = [
    # (session of a session.update, param, code)
    ({"type": "realtime"}, "session.type", V),
    ({"type": "transcription", "input_audio_format": "pcm16"}, "session.input_audio_format",
     "unknown_parameter"),
    ({"type": "transcription", "turn_detection": None}, "session.turn_detection",
     "unknown_parameter"),
    ({"type": "transcription", "audio": []}, "session.audio", T),
    ({"type": "transcription", "audio": {"input": "x"}}, "session.audio.input", T),
    ({"type": "transcription", "include": "logprobs"}, "session.include", T),
    ({"type": "transcription", "include": ["item.nope"]}, "session.include[0]", V),
]  # fmt: skip
TD = "turn_detection"
INPUT_REFUSALS = [
    # (key under session.audio.input, its value, param under session.audio.input, code)
    ("format", "pcm16", "format", T),
    ("format", {"type": "audio/wav"}, "format.type", V),
    ("format", {"type": "g711_ulaw"}, "format.type", V),
    ("format", {"type": "audio/pcmu", "rate": 16000}, "format.rate", V),
    ("format", {"type": "audio/pcma", "rate": 24000}, "format.rate", V),
    ("format", {"type": "audio/pcm", "rate": 8000}, "format.rate", V),
    ("format", {"rate": 44100}, "format.rate", V),
    ("format", {"rate": "24000"}, "format.rate", T),
    ("format", {"rate": True}, "format.rate", T),
    ("format", {"rate": 16000.5}, "format.rate", T),
    ("transcription", "en", "transcription", T),
    ("transcription", {"language": "tlh"}, "transcription.language", V),
    ("transcription", {"language": 7}, "transcription.language", T),
    ("transcription", {"prompt": ["a"]}, "transcription.prompt", T),
    ("transcription", {"model": 1}, "transcription.model", T),
    (TD, "server_vad", TD, T),
    (TD, {"type": "vad"}, f"{TD}.type", V),
    (TD, {"threshold": 1.5}, f"{TD}.threshold", V),
    (TD, {"threshold": -0.1}, f"{TD}.threshold", V),
    (TD, {"threshold": "0.5"}, f"{TD}.threshold", T),
    (TD, {"threshold": False}, f"{TD}.threshold", T),
    (TD, {"prefix_padding_ms": -1}, f"{TD}.prefix_padding_ms", V),
    (TD, {"prefix_padding_ms": 5001}, f"{TD}.prefix_padding_ms", V),
    (TD, {"silence_duration_ms": 99}, f"{TD}.silence_duration_ms", V),
    (TD, {"silence_duration_ms": 10001}, f"{TD}.silence_duration_ms", V),
    (TD, {"silence_duration_ms": {}}, f"{TD}.silence_duration_ms", T),
    (TD, {"type": "semantic_vad", "eagerness": "eager"}, f"{TD}.eagerness", V),
    (TD, {"idle_timeout_ms": 4999}, f"{TD}.idle_timeout_ms", V),
    (TD, {"idle_timeout_ms": 30001}, f"{TD}.idle_timeout_ms", V),
    (TD, {"idle_timeout_ms": "6000"}, f"{TD}.idle_timeout_ms", T),
    (TD, {"idle_timeout_ms": 6000.5}, f"{TD}.idle_timeout_ms", T),
]


@pytest.mark.parametrize(("session", "param", "code"), SESSION_REFUSALS)
def test_ga_session_refusals_name_the_field(session: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(EventError) as caught:
        apply_update(GA, {"type": "session.update", "session": session})
    assert (caught.value.param, caught.value.code) == (param, code)


@pytest.mark.parametrize(("key", "value", "param", "code"), INPUT_REFUSALS)
def test_ga_audio_input_refusals_name_the_field(
    key: str, value: Any, param: str, code: str
) -> None:
    session = {"type": "transcription", "audio": {"input": {key: value}}}
    with pytest.raises(EventError) as caught:
        apply_update(GA, {"type": "session.update", "session": session})
    assert (caught.value.param, caught.value.code) == (f"session.audio.input.{param}", code)


def test_messages_name_the_field_and_the_problem() -> None:
    threshold = {"type": "session.update", "session": {"audio": {"input": {"turn_detection": {
        "threshold": "high"}}}}}  # fmt: skip
    with pytest.raises(EventError) as caught:
        apply_update(GA, threshold)
    assert caught.value.message == (
        "Invalid type for 'session.audio.input.turn_detection.threshold': "
        "expected a number, but got a string instead."
    )
    rate = {"type": "session.update", "session": {"audio": {"input": {"format": {"rate": 8000}}}}}
    with pytest.raises(EventError, match=r"'session\.audio\.input\.format\.rate': 8000\."):
        apply_update(GA, rate)
    with pytest.raises(EventError, match="Unsupported language 'tlh'"):
        apply_update(GA, ga_update(transcription={"language": "tlh"}))


BETA_REFUSALS = [
    ({"input_audio_format": "audio/pcm"}, "session.input_audio_format", "invalid_value"),
    ({"input_audio_format": "audio/pcmu"}, "session.input_audio_format", "invalid_value"),
    ({"turn_detection": {"idle_timeout_ms": 100}}, "session.turn_detection.idle_timeout_ms",
     "invalid_value"),
    ({"input_audio_transcription": {"language": "xx"}},
     "session.input_audio_transcription.language", "invalid_value"),
    ({"turn_detection": {"threshold": 2}}, "session.turn_detection.threshold", "invalid_value"),
    ({"include": [None]}, "session.include[0]", "invalid_value"),
]  # fmt: skip


@pytest.mark.parametrize(("session", "param", "code"), BETA_REFUSALS)
def test_beta_refusals_name_the_field(session: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(EventError) as caught:
        apply_update(BETA, {"type": "transcription_session.update", "session": session})
    assert (caught.value.param, caught.value.code) == (param, code)


@pytest.mark.parametrize(
    ("kind", "encoding"), [("audio/pcmu", "g711_ulaw"), ("audio/pcma", "g711_alaw")]
)
def test_g711_is_8_khz_one_byte_a_sample(kind: str, encoding: str) -> None:
    config = apply_update(GA, ga_update(format={"type": kind}))
    assert (config.encoding, config.sample_rate, config.sample_bytes) == (encoding, 8000, 1)
    with_rate = {"type": "transcription", "audio": {"input": {"format": {"type": kind,
        "rate": 8000}}}}  # fmt: skip
    assert apply_update(GA, {"type": "session.update", "session": with_rate}) == config
    # back to PCM: OpenAI's 24 kHz, not G.711's rate
    pcm = apply_update(config, ga_update(format={"type": "audio/pcm"}))
    assert (pcm.encoding, pcm.sample_rate, pcm.sample_bytes) == ("pcm16", 24000, 2)
    beta = apply_update(BETA, beta_update(input_audio_format=encoding))
    assert (beta.encoding, beta.sample_rate) == (encoding, 8000)
    assert apply_update(beta, beta_update(input_audio_format="pcm16")).sample_rate == 24000


def test_a_rate_its_format_does_not_come_at_is_refused_naming_the_rate() -> None:
    telephone = {"type": "session.update", "session": {"audio": {"input": {"format": {
        "type": "audio/pcmu", "rate": 16000}}}}}  # fmt: skip
    with pytest.raises(EventError) as caught:
        apply_update(GA, telephone)
    assert caught.value.message == (
        "Invalid value for 'session.audio.input.format.rate': 16000. audio/pcmu comes at 8000 Hz."
    )
    assert (caught.value.param, caught.value.code) == ("session.audio.input.format.rate", V)


def test_idle_timeout_is_taken_kept_and_turned_off_by_null() -> None:
    on = apply_update(GA, ga_update(turn_detection={"type": "server_vad", "idle_timeout_ms": 6000}))
    assert on.turn_detection == ServerVad(idle_timeout_ms=6000)
    threshold = ga_update(turn_detection={"type": "server_vad", "threshold": 0.6})
    assert apply_update(on, threshold).turn_detection == ServerVad(0.6, idle_timeout_ms=6000)
    null = ga_update(turn_detection={"type": "server_vad", "idle_timeout_ms": None})
    assert apply_update(on, null).turn_detection == ServerVad()
    # OpenAI's idle timeout is server_vad's only
    semantic = apply_update(on, ga_update(turn_detection={"type": "semantic_vad"}))
    assert semantic.turn_detection is not None
    assert semantic.turn_detection.idle_timeout_ms is None
    at_bounds = [5000, 30000]
    for ms in at_bounds:
        update = ga_update(turn_detection={"type": "server_vad", "idle_timeout_ms": ms})
        assert apply_update(GA, update).turn_detection == ServerVad(idle_timeout_ms=ms)
    beta = {"type": "transcription_session.update", "session": {"turn_detection": {
        "type": "server_vad", "idle_timeout_ms": 5000}}}  # fmt: skip
    assert apply_update(BETA, beta).turn_detection == ServerVad(idle_timeout_ms=5000)


@pytest.mark.parametrize(
    ("event", "param", "code"),
    [
        ({"type": "session.update"}, "session", "missing_required_parameter"),
        ({"type": "session.update", "session": None}, "session", "missing_required_parameter"),
        ({"type": "session.update", "session": "x"}, "session", "invalid_type"),
        ({"type": "input_audio_buffer.commit"}, "type", "invalid_event"),
    ],
)
def test_malformed_updates(event: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(EventError) as caught:
        apply_update(GA, event)
    assert (caught.value.param, caught.value.code) == (param, code)


def test_a_refused_update_changes_nothing() -> None:
    update = ga_update(
        transcription={"language": "fr"}, turn_detection={"type": "server_vad", "threshold": 0.1}
    )
    update["session"]["audio"]["input"]["format"] = {"type": "audio/pcm", "rate": 8000}
    with pytest.raises(EventError):
        apply_update(GA, update)
    assert SessionConfig() == GA  # frozen: nothing to roll back


def test_unknown_fields_are_ignored() -> None:
    event = ga_update(transcription={"language": "en"})
    event["session"]["future_field"] = {"anything": 1}
    event["session"]["audio"]["output"] = {"voice": "x"}
    event["session"]["audio"]["input"]["transcription"]["future_field"] = 1
    event["event_id"] = "evt_1"
    assert apply_update(GA, event) == SessionConfig(language=languages.resolve("en"))


POLICY = Policy(Catalog("qwen3-asr", ["gpt-4o-transcribe"], 0), 100, 1000)


def test_what_only_the_server_knows_is_checked_where_the_dialect_puts_it() -> None:
    check(SessionConfig(model="gpt-4o-transcribe", prompt="short"), POLICY)
    for config, param, code in (
        (
            SessionConfig(model="gpt-9"),
            "session.audio.input.transcription.model",
            "model_not_found",
        ),
        (
            SessionConfig(model="gpt-4o-transcribe-diarize", beta=True),
            "session.input_audio_transcription.model",
            "unsupported_value",
        ),
        (SessionConfig(prompt="x" * 200), "session.audio.input.transcription.prompt", None),
        (
            SessionConfig(keywords=("y" * 60,) * 2),
            "session.audio.input.transcription.keywords",
            None,
        ),
    ):
        with pytest.raises(EventError) as caught:
            check(config, POLICY)
        assert caught.value.param == param
        assert caught.value.code == (code or "context_too_long")


def test_the_handshake_offers_transcription_sessions_only() -> None:
    assert handshake({"intent": "transcription", "model": "qwen3-asr"}, POLICY).intent == (
        "transcription"
    )
    assert handshake({}, POLICY).model is None
    for query, status, code in (
        ({"intent": "conversation"}, 400, "unsupported_intent"),
        ({"model": "whisper-9"}, 404, "model_not_found"),
    ):
        with pytest.raises(APIError) as caught:
            handshake(query, POLICY)
        assert (caught.value.status, caught.value.code) == (status, code)


def test_an_append_carries_base64_audio() -> None:
    assert appended_audio({"type": "input_audio_buffer.append", "audio": "AAABAA=="}) == (
        b"\x00\x00\x01\x00"
    )
    for audio, code in ((None, "missing_required_parameter"), ("not base64!", "invalid_value")):
        with pytest.raises(EventError) as refused:
            appended_audio({"type": "input_audio_buffer.append", "audio": audio})
        assert (refused.value.code, refused.value.param) == (code, "audio")
