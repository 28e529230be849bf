"""Realtime server events, checked against the openai SDK's own event types."""

from __future__ import annotations

import re
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
    InputAudioBufferTimeoutTriggered,
    RealtimeErrorEvent,
    RealtimeTranscriptionSessionCreateRequest,
    RealtimeTranscriptionSessionCreateResponse,
    SessionCreatedEvent,
    SessionUpdatedEvent,
)
from openai.types.realtime.realtime_conversation_item_user_message import (
    RealtimeConversationItemUserMessage,
)

from qwen3_asr_server.entrypoints.realtime import server_events as events
from qwen3_asr_server.entrypoints.realtime.protocol import ServerVad, SessionConfig
from qwen3_asr_server.errors import APIError, EventError, ServerError
from qwen3_asr_server.model import languages
from qwen3_asr_server.transcription.usage import Tokens

GA = SessionConfig()
BETA = SessionConfig(beta=True)
LOGPROBS = [{"token": "hi", "bytes": [104, 105], "logprob": -0.25}]


def sdk(model: type[pydantic.BaseModel], event: dict[str, Any]) -> Any:
    """Validate as a client would receive it: the JSON on the wire, strictly typed."""
    return model.model_validate_json(orjson.dumps(event), strict=True)


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
    idle = sdk(InputAudioBufferTimeoutTriggered, events.timeout_triggered("item_c", 2150, 8150))
    assert (idle.item_id, idle.audio_start_ms, idle.audio_end_ms) == ("item_c", 2150, 8150)


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
    usage = Tokens(input=40, output=3, audio=26).body()
    heard = [languages.resolve(name) for name in ("French", "English", "French")]
    built = events.transcription_completed(
        "item_a", "Hello.", usage, logprobs=LOGPROBS, spoken=heard
    )
    parsed = sdk(model, built)
    assert (parsed.item_id, parsed.transcript, parsed.content_index) == ("item_a", "Hello.", 0)
    assert (parsed.usage.type, parsed.usage.total_tokens) == ("tokens", 43)
    details = parsed.usage.input_token_details
    assert (details.audio_tokens, details.text_tokens) == (26, 14)
    assert parsed.logprobs[0].bytes == [104, 105]
    if model is ConversationItemInputAudioTranscriptionCompletedEvent:
        assert [language.code for language in parsed.languages] == ["fr", "en"]


def test_logprobs_are_left_out_unless_asked_for() -> None:
    assert "logprobs" not in events.transcription_delta("item_a", "x")
    duration = {"type": "duration", "seconds": 1.5}
    completed = events.transcription_completed("item_a", "x", duration, content_index=0)
    assert "logprobs" not in completed
    assert (
        sdk(ConversationItemInputAudioTranscriptionCompletedEvent, completed).usage.seconds == 1.5
    )


def test_transcription_failed() -> None:
    failure = APIError(503, "The model is unavailable.", code="upstream_error")
    event = events.transcription_failed("item_a", failure)
    parsed = sdk(ConversationItemInputAudioTranscriptionFailedEvent, event)
    assert (parsed.item_id, parsed.content_index) == ("item_a", 0)
    assert (parsed.error.type, parsed.error.code) == ("server_error", "upstream_error")
    assert parsed.error.message == "The model is unavailable."


@pytest.mark.parametrize("model", [RealtimeErrorEvent, BetaErrorEvent])
def test_error_event_quotes_the_client_event(model: type[pydantic.BaseModel]) -> None:
    exc = EventError("Bad rate.", "invalid_value", "session.audio.input.format.rate")
    parsed = sdk(model, events.error(exc, client_event_id="evt_client_7"))
    assert parsed.error.type == "invalid_request_error"
    assert (parsed.error.code, parsed.error.param) == ("invalid_value", exc.param)
    assert (parsed.error.message, parsed.error.event_id) == ("Bad rate.", "evt_client_7")
    plain = sdk(model, events.error(ServerError("Server busy.")))
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


@pytest.mark.parametrize(
    ("encoding", "kind"), [("g711_ulaw", "audio/pcmu"), ("g711_alaw", "audio/pcma")]
)
def test_g711_and_the_idle_timeout_echoed_as_the_sdk_has_them(encoding: str, kind: str) -> None:
    vad = ServerVad(idle_timeout_ms=8000)
    config = SessionConfig(encoding=encoding, sample_rate=8000, turn_detection=vad)
    parsed = sdk(SessionUpdatedEvent, events.session_updated(config, "sess_1"))
    audio_input = parsed.session.audio.input
    assert audio_input.format.type == kind
    assert "rate" not in audio_input.format.model_dump(exclude_unset=True)  # 8 kHz, always
    assert audio_input.turn_detection.idle_timeout_ms == 8000
    plain = events.session_object(GA, "sess_1")["audio"]["input"]["turn_detection"]
    assert plain["idle_timeout_ms"] is None
    beta = events.session_object(SessionConfig(encoding=encoding, beta=True), "sess_1")
    assert beta["input_audio_format"] == encoding


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
