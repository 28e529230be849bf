"""The Realtime transcription protocol, checked against the openai SDK's own event types."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import orjson
import pydantic
import pytest
from openai.types.beta.realtime import (
    ConversationItemCreatedEvent as BetaItemCreated,
)
from openai.types.beta.realtime import (
    ConversationItemInputAudioTranscriptionCompletedEvent as BetaCompleted,
)
from openai.types.beta.realtime import (
    ConversationItemInputAudioTranscriptionDeltaEvent as BetaDelta,
)
from openai.types.beta.realtime import (
    ErrorEvent as BetaErrorEvent,
)
from openai.types.beta.realtime import (
    TranscriptionSessionUpdate,
    TranscriptionSessionUpdatedEvent,
)
from openai.types.realtime import (
    ConversationItemAdded,
    ConversationItemDone,
    ConversationItemInputAudioTranscriptionCompletedEvent,
    ConversationItemInputAudioTranscriptionDeltaEvent,
    ConversationItemInputAudioTranscriptionFailedEvent,
    InputAudioBufferClearedEvent,
    InputAudioBufferCommittedEvent,
    InputAudioBufferSpeechStartedEvent,
    InputAudioBufferSpeechStoppedEvent,
    RealtimeErrorEvent,
    RealtimeTranscriptionSessionCreateRequest,
    RealtimeTranscriptionSessionCreateResponse,
    SessionCreatedEvent,
    SessionUpdatedEvent,
    SessionUpdateEvent,
)
from openai.types.realtime.realtime_conversation_item_user_message import (
    RealtimeConversationItemUserMessage,
)

from qwen3_asr_server import languages
from qwen3_asr_server.realtime import server_events as events
from qwen3_asr_server.realtime.client_events import SEMANTIC_SILENCE_MS
from qwen3_asr_server.realtime.server_events import EventError, ServerVad, SessionConfig

GA = SessionConfig()
BETA = SessionConfig(beta=True)
LOGPROBS = [{"token": "hi", "bytes": [104, 105], "logprob": -0.25}]


def sdk(model: type[pydantic.BaseModel], event: dict[str, Any]) -> Any:
    """Validate as a client would receive it: the JSON on the wire, strictly typed."""
    return model.model_validate_json(orjson.dumps(event), strict=True)


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


# --- server events against the SDK's models --------------------------------------------------


def test_the_sdk_validation_is_strict_enough_to_catch_a_broken_event() -> None:
    event = events.speech_started("item_1", 120)
    sdk(InputAudioBufferSpeechStartedEvent, event)
    del event["audio_start_ms"]
    with pytest.raises(pydantic.ValidationError):
        sdk(InputAudioBufferSpeechStartedEvent, event)
    with pytest.raises(pydantic.ValidationError):  # a string where an integer belongs
        sdk(InputAudioBufferSpeechStartedEvent, {**event, "audio_start_ms": "120"})


def test_vad_and_buffer_events() -> None:
    started = sdk(InputAudioBufferSpeechStartedEvent, events.speech_started("item_a", 300))
    assert (started.item_id, started.audio_start_ms) == ("item_a", 300)
    stopped = sdk(InputAudioBufferSpeechStoppedEvent, events.speech_stopped("item_a", 1800))
    assert (stopped.item_id, stopped.audio_end_ms) == ("item_a", 1800)
    committed = sdk(InputAudioBufferCommittedEvent, events.buffer_committed("item_b", "item_a"))
    assert (committed.item_id, committed.previous_item_id) == ("item_b", "item_a")
    first = sdk(InputAudioBufferCommittedEvent, events.buffer_committed("item_a", None))
    assert first.previous_item_id is None
    assert sdk(InputAudioBufferClearedEvent, events.buffer_cleared()).type == (
        "input_audio_buffer.cleared"
    )


@pytest.mark.parametrize(
    ("builder", "model"),
    [(events.item_added, ConversationItemAdded), (events.item_done, ConversationItemDone)],
)
def test_ga_user_items(builder: Any, model: type[pydantic.BaseModel]) -> None:
    parsed = sdk(model, builder("item_b", "item_a", "hello"))
    assert isinstance(parsed.item, RealtimeConversationItemUserMessage)
    assert (parsed.item.id, parsed.item.role, parsed.previous_item_id) == (
        "item_b",
        "user",
        "item_a",
    )
    assert parsed.item.content[0].type == "input_audio"
    assert parsed.item.content[0].transcript == "hello"
    assert parsed.item.content[0].audio is None  # the audio is never echoed back


def test_beta_user_item() -> None:
    parsed = sdk(BetaItemCreated, events.item_created("item_b", None))
    assert parsed.item.id == "item_b"
    assert parsed.item.content[0].type == "input_audio"
    assert parsed.item.content[0].transcript is None


def test_item_events_speak_the_clients_dialect() -> None:
    assert [e["type"] for e in events.item_events(GA, "item_b", "item_a")] == [
        "conversation.item.added",
        "conversation.item.done",
    ]
    (created,) = events.item_events(BETA, "item_b", "item_a")
    assert created["type"] == "conversation.item.created"
    assert sdk(BetaItemCreated, created).previous_item_id == "item_a"


# GA and beta share these two events: each builder is checked against both generations
@pytest.mark.parametrize("model", [ConversationItemInputAudioTranscriptionDeltaEvent, BetaDelta])
def test_transcription_delta(model: type[pydantic.BaseModel]) -> None:
    parsed = sdk(model, events.transcription_delta("item_a", "Hel", logprobs=LOGPROBS))
    assert (parsed.item_id, parsed.delta, parsed.content_index) == ("item_a", "Hel", 0)
    assert parsed.logprobs[0].logprob == -0.25


@pytest.mark.parametrize(
    "model", [ConversationItemInputAudioTranscriptionCompletedEvent, BetaCompleted]
)
def test_transcription_completed(model: type[pydantic.BaseModel]) -> None:
    usage = events.token_usage(input_tokens=40, output_tokens=3)
    built = events.transcription_completed("item_a", "Hello.", usage, logprobs=LOGPROBS)
    parsed = sdk(model, built)
    assert (parsed.item_id, parsed.transcript, parsed.content_index) == ("item_a", "Hello.", 0)
    assert (parsed.usage.type, parsed.usage.total_tokens) == ("tokens", 43)
    assert parsed.logprobs[0].bytes == [104, 105]


def test_logprobs_are_left_out_unless_asked_for() -> None:
    assert "logprobs" not in events.transcription_delta("item_a", "x")
    duration = {"type": "duration", "seconds": 1.5}
    completed = events.transcription_completed("item_a", "x", duration, content_index=0)
    assert "logprobs" not in completed
    assert (
        sdk(ConversationItemInputAudioTranscriptionCompletedEvent, completed).usage.seconds == 1.5
    )


def test_transcription_failed() -> None:
    event = events.transcription_failed("item_a", "The model is unavailable.", "upstream_error")
    parsed = sdk(ConversationItemInputAudioTranscriptionFailedEvent, event)
    assert (parsed.item_id, parsed.content_index) == ("item_a", 0)
    assert (parsed.error.type, parsed.error.code) == ("server_error", "upstream_error")
    assert parsed.error.message == "The model is unavailable."


@pytest.mark.parametrize("model", [RealtimeErrorEvent, BetaErrorEvent])
def test_error_event_quotes_the_client_event(model: type[pydantic.BaseModel]) -> None:
    exc = EventError("Bad rate.", "invalid_value", "session.audio.input.format.rate")
    parsed = sdk(model, events.event_error(exc, client_event_id="evt_client_7"))
    assert parsed.error.type == "invalid_request_error"
    assert (parsed.error.code, parsed.error.param) == ("invalid_value", exc.param)
    assert (parsed.error.message, parsed.error.event_id) == ("Bad rate.", "evt_client_7")
    plain = sdk(model, events.error("Server busy.", type="server_error"))
    assert (plain.error.type, plain.error.code, plain.error.event_id) == (
        "server_error",
        None,
        None,
    )


def test_ids_are_short_random_and_prefixed() -> None:
    ids = {events.new_id("item") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"item_[A-Za-z0-9]{21}", i) for i in ids)
    assert events.buffer_cleared()["event_id"] != events.buffer_cleared()["event_id"]
    assert events.buffer_cleared()["event_id"].startswith("event_")


# --- the session object ----------------------------------------------------------------------


@pytest.mark.parametrize("model", [SessionCreatedEvent, SessionUpdatedEvent])
def test_ga_session_events(model: type[pydantic.BaseModel]) -> None:
    config = SessionConfig(language=languages.resolve("French"), prompt="Names: Zoë", model="m")
    build = events.session_created if model is SessionCreatedEvent else events.session_updated
    event = build(config, "sess_1")
    parsed = sdk(model, event)
    assert isinstance(parsed.session, RealtimeTranscriptionSessionCreateRequest)
    audio_input = parsed.session.audio.input
    assert (audio_input.format.type, audio_input.format.rate) == ("audio/pcm", 24000)
    assert audio_input.transcription.language == "fr"
    assert (audio_input.transcription.prompt, audio_input.transcription.model) == (
        "Names: Zoë",
        "m",
    )
    vad = audio_input.turn_detection
    assert (vad.type, vad.threshold, vad.prefix_padding_ms, vad.silence_duration_ms) == (
        "server_vad",
        0.5,
        300,
        500,
    )
    response = sdk(RealtimeTranscriptionSessionCreateResponse, event["session"])
    assert (response.id, response.object) == ("sess_1", "realtime.transcription_session")


def test_ga_session_object_with_16_khz_manual_commits_and_logprobs() -> None:
    config = SessionConfig(sample_rate=16000, turn_detection=None, logprobs=True)
    session = events.session_object(config, "sess_1")
    # 16 kHz is this server's extension: the SDK's type only admits 24000, so no SDK check here
    assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 16000}
    assert session["audio"]["input"]["turn_detection"] is None
    assert session["include"] == ["item.input_audio_transcription.logprobs"]
    at_24k = events.session_updated(SessionConfig(turn_detection=None, logprobs=True), "sess_1")
    parsed = sdk(SessionUpdatedEvent, at_24k)
    assert parsed.session.audio.input.turn_detection is None
    assert parsed.session.include == ["item.input_audio_transcription.logprobs"]


@pytest.mark.parametrize("build", [events.session_created, events.session_updated])
def test_beta_session_events(build: Any) -> None:
    config = SessionConfig(
        language=languages.resolve("de"), prompt="p", model="gpt-4o-transcribe", beta=True
    )
    event = build(config, "sess_1")
    assert event["type"] == (
        "transcription_session.created"
        if build is events.session_created
        else "transcription_session.updated"
    )
    assert "client_secret" not in event["session"]
    # The SDK has no created model, and its session type requires a `client_secret` that the
    # WebSocket API never sends (its own docstring says so): both added here only to validate.
    secret = {"expires_at": 0, "value": ""}
    patched = {
        **event,
        "type": "transcription_session.updated",
        "session": {**event["session"], "client_secret": secret},
    }
    parsed = sdk(TranscriptionSessionUpdatedEvent, patched)
    assert parsed.session.input_audio_format == "pcm16"
    transcription = parsed.session.input_audio_transcription
    assert (transcription.language, transcription.prompt) == ("de", "p")
    assert parsed.session.turn_detection.type == "server_vad"
    assert parsed.session.turn_detection.silence_duration_ms == 500
    assert event["session"]["id"] == "sess_1"
    assert event["session"]["object"] == "realtime.transcription_session"


# --- client events: session updates ----------------------------------------------------------


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
    config = events.apply_update(BETA, event)
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
    config = events.apply_update(SessionConfig(sample_rate=16000), event)
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
    assert events.apply_update(start, only_threshold) == replace(
        start, turn_detection=ServerVad(0.2, 100, 900)
    )
    only_prompt = ga_update(transcription={"prompt": "new"}, format={"type": "audio/pcm"})
    assert events.apply_update(start, only_prompt) == replace(start, prompt="new")
    empty = {"type": "session.update", "session": {"type": "transcription"}}
    assert events.apply_update(start, empty) == start
    assert events.apply_update(start, beta_update()) == replace(start, beta=True)


def test_null_turn_detection_means_manual_commits_and_vad_comes_back_with_defaults() -> None:
    off = events.apply_update(GA, ga_update(turn_detection=None))
    assert off.turn_detection is None
    assert events.apply_update(GA, beta_update(turn_detection=None)).turn_detection is None
    on = events.apply_update(off, ga_update(turn_detection={"type": "server_vad"}))
    assert on.turn_detection == ServerVad()


def test_null_transcription_and_language_reset_to_defaults() -> None:
    start = SessionConfig(language=languages.resolve("fr"), prompt="ctx", model="m")
    assert events.apply_update(start, ga_update(transcription=None)) == GA
    cleared = events.apply_update(start, ga_update(transcription={"language": None}))
    assert (cleared.language, cleared.prompt) == (None, "ctx")
    blank = beta_update(input_audio_transcription={"language": "", "prompt": None})
    assert (
        events.apply_update(start, blank).language,
        events.apply_update(start, blank).prompt,
    ) == (
        None,
        "",
    )


@pytest.mark.parametrize(("value", "code"), [("fr", "fr"), ("French", "fr"), ("YUE", "yue")])
def test_language_by_code_or_name(value: str, code: str) -> None:
    config = events.apply_update(GA, ga_update(transcription={"language": value}))
    assert config.language is not None
    assert config.language.code == code
    assert events.session_object(config, "s")["audio"]["input"]["transcription"]["language"] == code


@pytest.mark.parametrize("eagerness", ["low", "medium", "high", "auto", None])
def test_semantic_vad_becomes_server_vad(eagerness: str | None) -> None:
    turn_detection: dict[str, Any] = {"type": "semantic_vad"}
    if eagerness:
        turn_detection["eagerness"] = eagerness
    config = events.apply_update(GA, ga_update(turn_detection=turn_detection))
    silence = SEMANTIC_SILENCE_MS[eagerness or "auto"]
    assert config.turn_detection == ServerVad(0.5, 300, silence)
    echoed = events.session_object(config, "s")["audio"]["input"]["turn_detection"]
    assert (echoed["type"], echoed["silence_duration_ms"]) == ("server_vad", silence)


def test_semantic_vad_eagerness_orders_the_silence() -> None:
    assert SEMANTIC_SILENCE_MS["low"] > SEMANTIC_SILENCE_MS["medium"] > SEMANTIC_SILENCE_MS["high"]
    assert SEMANTIC_SILENCE_MS["auto"] == SEMANTIC_SILENCE_MS["medium"]


def test_integral_floats_pass_as_integers() -> None:
    update = ga_update(turn_detection={"type": "server_vad", "silence_duration_ms": 700})
    update["session"]["audio"]["input"]["turn_detection"]["silence_duration_ms"] = 700.0
    vad = events.apply_update(GA, update).turn_detection
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
    ("format", {"type": "audio/pcmu"}, "format.type", V),
    ("format", {"type": "audio/pcma"}, "format.type", V),
    ("format", {"type": "audio/wav"}, "format.type", V),
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
]


@pytest.mark.parametrize(("session", "param", "code"), SESSION_REFUSALS)
def test_ga_session_refusals_name_the_field(session: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(EventError) as caught:
        events.apply_update(GA, {"type": "session.update", "session": session})
    assert (caught.value.param, caught.value.code) == (param, code)


@pytest.mark.parametrize(("key", "value", "param", "code"), INPUT_REFUSALS)
def test_ga_audio_input_refusals_name_the_field(
    key: str, value: Any, param: str, code: str
) -> None:
    session = {"type": "transcription", "audio": {"input": {key: value}}}
    with pytest.raises(EventError) as caught:
        events.apply_update(GA, {"type": "session.update", "session": session})
    assert (caught.value.param, caught.value.code) == (f"session.audio.input.{param}", code)


def test_messages_name_the_field_and_the_problem() -> None:
    threshold = {"type": "session.update", "session": {"audio": {"input": {"turn_detection": {
        "threshold": "high"}}}}}  # fmt: skip
    with pytest.raises(EventError) as caught:
        events.apply_update(GA, threshold)
    assert caught.value.message == (
        "Invalid type for 'session.audio.input.turn_detection.threshold': "
        "expected a number, but got a string instead."
    )
    rate = {"type": "session.update", "session": {"audio": {"input": {"format": {"rate": 8000}}}}}
    with pytest.raises(EventError, match=r"'session\.audio\.input\.format\.rate': 8000\."):
        events.apply_update(GA, rate)
    with pytest.raises(EventError, match="Unsupported language 'tlh'"):
        events.apply_update(GA, ga_update(transcription={"language": "tlh"}))


BETA_REFUSALS = [
    ({"input_audio_format": "g711_ulaw"}, "session.input_audio_format", "invalid_value"),
    ({"input_audio_format": "g711_alaw"}, "session.input_audio_format", "invalid_value"),
    ({"input_audio_format": "audio/pcm"}, "session.input_audio_format", "invalid_value"),
    ({"input_audio_transcription": {"language": "xx"}},
     "session.input_audio_transcription.language", "invalid_value"),
    ({"turn_detection": {"threshold": 2}}, "session.turn_detection.threshold", "invalid_value"),
    ({"include": [None]}, "session.include[0]", "invalid_value"),
]  # fmt: skip


@pytest.mark.parametrize(("session", "param", "code"), BETA_REFUSALS)
def test_beta_refusals_name_the_field(session: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(EventError) as caught:
        events.apply_update(BETA, {"type": "transcription_session.update", "session": session})
    assert (caught.value.param, caught.value.code) == (param, code)


def test_g711_refusal_says_what_to_send() -> None:
    with pytest.raises(EventError, match=r"G\.711.*'audio/pcm'"):
        events.apply_update(GA, ga_update(format={"type": "audio/pcmu"}))


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
        events.apply_update(GA, event)
    assert (caught.value.param, caught.value.code) == (param, code)


def test_a_refused_update_changes_nothing() -> None:
    update = ga_update(
        transcription={"language": "fr"}, turn_detection={"type": "server_vad", "threshold": 0.1}
    )
    update["session"]["audio"]["input"]["format"] = {"type": "audio/pcm", "rate": 8000}
    with pytest.raises(EventError):
        events.apply_update(GA, update)
    assert SessionConfig() == GA  # frozen: nothing to roll back


def test_unknown_fields_are_ignored() -> None:
    event = ga_update(transcription={"language": "en", "keywords": ["Qwen"], "delay": "low"})
    event["session"]["future_field"] = {"anything": 1}
    event["session"]["audio"]["output"] = {"voice": "x"}
    event["event_id"] = "evt_1"
    assert events.apply_update(GA, event) == SessionConfig(language=languages.resolve("en"))


# --- client events: frames -------------------------------------------------------------------


def test_parse_client_event() -> None:
    event = events.parse_client_event(
        '{"type": "input_audio_buffer.commit", "event_id": "e1"}', 100
    )
    assert event == {"type": "input_audio_buffer.commit", "event_id": "e1"}
    assert events.client_event_id(event) == "e1"
    assert events.client_event_id({"type": "x", "event_id": 5}) is None


@pytest.mark.parametrize(
    ("frame", "code", "param"),
    [
        ("not json", "invalid_json", None),
        ('{"type": "x"', "invalid_json", None),
        ('{"type": "x", "v": NaN}', "invalid_json", None),
        ("", "invalid_json", None),
        ('[{"type": "x"}]', "invalid_event", None),
        ('"session.update"', "invalid_event", None),
        ("null", "invalid_event", None),
        ('{"event_id": "e1"}', "invalid_event", "type"),
        ('{"type": 5}', "invalid_event", "type"),
        ('{"type": null}', "invalid_event", "type"),
        (b'{"type": "input_audio_buffer.commit"}', "binary_frame_not_supported", None),
    ],
)
def test_parse_client_event_refusals(frame: str | bytes, code: str, param: str | None) -> None:
    with pytest.raises(EventError) as caught:
        events.parse_client_event(frame, 1000)
    assert (caught.value.code, caught.value.param) == (code, param)


def test_size_limit_counts_utf8_bytes() -> None:
    ascii_frame = '{"type": "x", "t": "' + "a" * 80 + '"}'
    assert events.parse_client_event(ascii_frame, len(ascii_frame))["type"] == "x"
    with pytest.raises(EventError) as caught:
        events.parse_client_event(ascii_frame, len(ascii_frame) - 1)
    assert caught.value.code == "event_too_large"
    wide = '{"type": "x", "t": "' + "é" * 40 + '"}'  # 2 bytes each in UTF-8
    assert len(wide) <= 100 < len(wide.encode())
    with pytest.raises(EventError, match=r"larger than 100 bytes"):
        events.parse_client_event(wide, 100)
    assert events.parse_client_event(wide, len(wide.encode()))["t"] == "é" * 40
