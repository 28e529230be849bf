"""Server events of the Realtime API's transcription protocol, as JSON-ready dicts. No I/O.

Shapes follow the openai SDK's types (`openai.types.realtime`, and `openai.types.beta.realtime`
for beta clients); every event gets a fresh `event_id`. Client events are parsed in
`client_events` and `entrypoints.realtime.protocol`.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ...errors import ServerError
from ...model import languages
from ...model.languages import Language
from ...transcription.transcript import Segment
from .protocol import ENCODINGS, LOGPROBS, PCM16, SemanticVad, SessionConfig

_ID_ALPHABET = string.ascii_letters + string.digits
_SESSION_OBJECT = "realtime.transcription_session"
_FORMAT_TYPES = {encoding: kind for kind, encoding in ENCODINGS.items()}  # GA's, by encoding

Event = dict[str, Any]
LogProbs = Sequence[Mapping[str, Any]]  # [{"token", "bytes", "logprob"}, ...]
Send = Callable[[Event], Awaitable[None]]  # how a session's parts send; raises ClientGone


class ClientGone(Exception):
    """Events can no longer reach the client: it left, or stopped reading."""


def new_id(prefix: str) -> str:
    """An id shaped like OpenAI's (`event_C9G8mqI3IucaojlVKE8Cs`): prefix, `_`, 21 base62.

    Prefixes in use: `event`, `item`, `sess`.
    """
    return prefix + "_" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(21))


def _event(type: str, **fields: Any) -> Event:
    return {"type": type, "event_id": new_id("event"), **fields}


def session_object(config: SessionConfig, session_id: str) -> dict[str, Any]:
    """The effective configuration as OpenAI echoes it: GA or beta shape, as the client speaks.

    The beta shape has no sample rate: `pcm16` there means 24 kHz. Nor has GA's G.711 format
    (`audio/pcmu`, `audio/pcma`): it is 8 kHz by definition.
    """
    language = config.language.code if config.language else None
    transcription: dict[str, Any] = {
        "model": config.model,
        "language": language,
        "prompt": config.prompt,
    }
    if config.languages:
        transcription["languages"] = [lang.code for lang in config.languages]
    if config.keywords:
        transcription["keywords"] = list(config.keywords)
    if config.delay is not None:
        transcription["delay"] = config.delay
    if config.max_speakers is not None:
        transcription["max_speakers"] = config.max_speakers
    vad = config.turn_detection
    turn_detection: dict[str, Any] | None = None
    if isinstance(vad, SemanticVad):
        turn_detection = {"type": "semantic_vad", "eagerness": vad.eagerness}
    elif vad is not None:
        turn_detection = {
            "type": "server_vad",
            "threshold": vad.threshold,
            "prefix_padding_ms": vad.prefix_padding_ms,
            "silence_duration_ms": vad.silence_duration_ms,
            "idle_timeout_ms": vad.idle_timeout_ms,
        }
    include = [LOGPROBS] if config.logprobs else None
    if config.beta:
        return {
            "id": session_id,
            "object": _SESSION_OBJECT,
            "input_audio_format": config.encoding,
            "input_audio_transcription": transcription,
            "turn_detection": turn_detection,
            "input_audio_noise_reduction": None,
            "include": include,
        }
    audio_format: dict[str, Any] = {"type": _FORMAT_TYPES[config.encoding]}
    if config.encoding == PCM16:
        audio_format["rate"] = config.sample_rate
    audio_input = {
        "format": audio_format,
        "transcription": transcription,
        "turn_detection": turn_detection,
        "noise_reduction": None,
    }
    return {
        "id": session_id,
        "object": _SESSION_OBJECT,
        "type": "transcription",
        "audio": {"input": audio_input},
        "include": include,
    }


def session_created(config: SessionConfig, session_id: str) -> Event:
    """The first event on a connection (beta: `transcription_session.created`)."""
    kind = "transcription_session.created" if config.beta else "session.created"
    return _event(kind, session=session_object(config, session_id))


def session_updated(config: SessionConfig, session_id: str) -> Event:
    """The answer to an update: the whole effective configuration."""
    kind = "transcription_session.updated" if config.beta else "session.updated"
    return _event(kind, session=session_object(config, session_id))


def speech_started(item_id: str, audio_start_ms: int) -> Event:
    """VAD heard speech; `item_id` names the item its commit will create."""
    return _event(
        "input_audio_buffer.speech_started", audio_start_ms=audio_start_ms, item_id=item_id
    )


def speech_stopped(item_id: str, audio_end_ms: int) -> Event:
    return _event("input_audio_buffer.speech_stopped", audio_end_ms=audio_end_ms, item_id=item_id)


def buffer_committed(item_id: str, previous_item_id: str | None) -> Event:
    return _event(
        "input_audio_buffer.committed", item_id=item_id, previous_item_id=previous_item_id
    )


def timeout_triggered(item_id: str, audio_start_ms: int, audio_end_ms: int) -> Event:
    """Server VAD heard no speech for `idle_timeout_ms`: that silence becomes item `item_id`."""
    return _event(
        "input_audio_buffer.timeout_triggered",
        item_id=item_id,
        audio_start_ms=audio_start_ms,
        audio_end_ms=audio_end_ms,
    )


def buffer_cleared() -> Event:
    return _event("input_audio_buffer.cleared")


def user_item(item_id: str, transcript: str | None = None) -> dict[str, Any]:
    """The user message holding committed audio; the audio itself is never echoed."""
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "status": "completed",
        "role": "user",
        "content": [{"type": "input_audio", "transcript": transcript}],
    }


def item_added(item_id: str, previous_item_id: str | None, transcript: str | None = None) -> Event:
    kind = "conversation.item.added"
    return _event(kind, previous_item_id=previous_item_id, item=user_item(item_id, transcript))


def item_done(item_id: str, previous_item_id: str | None, transcript: str | None = None) -> Event:
    kind = "conversation.item.done"
    return _event(kind, previous_item_id=previous_item_id, item=user_item(item_id, transcript))


def item_created(
    item_id: str, previous_item_id: str | None, transcript: str | None = None
) -> Event:
    """Beta's single event for a new item (GA splits it into added and done)."""
    kind = "conversation.item.created"
    return _event(kind, previous_item_id=previous_item_id, item=user_item(item_id, transcript))


def item_events(config: SessionConfig, item_id: str, previous_item_id: str | None) -> list[Event]:
    """What follows `input_audio_buffer.committed`: the new item, announced in the client's
    dialect. Its audio is final at commit, so GA's `done` comes at once; the transcript
    follows in transcription events."""
    if config.beta:
        return [item_created(item_id, previous_item_id)]
    return [item_added(item_id, previous_item_id), item_done(item_id, previous_item_id)]


def transcription_delta(
    item_id: str, delta: str, content_index: int = 0, logprobs: LogProbs | None = None
) -> Event:
    """A piece of the transcript; `logprobs` only when the session `include`s them."""
    fields: dict[str, Any] = {"item_id": item_id, "content_index": content_index, "delta": delta}
    if logprobs is not None:
        fields["logprobs"] = list(logprobs)
    return _event("conversation.item.input_audio_transcription.delta", **fields)


def transcription_segment(
    item_id: str, number: int, segment: Segment, content_index: int = 0
) -> Event:
    """One speaker's part of an item's transcript (diarizing sessions), times in the item."""
    return _event(
        "conversation.item.input_audio_transcription.segment",
        item_id=item_id,
        content_index=content_index,
        id=f"seg_{number}",
        start=round(segment.start, 3),
        end=round(segment.end, 3),
        speaker=segment.speaker or "A",
        text=segment.text,
    )


def transcription_completed(
    item_id: str,
    transcript: str,
    usage: Mapping[str, Any],
    content_index: int = 0,
    logprobs: LogProbs | None = None,
    spoken: Sequence[Language] = (),
) -> Event:
    """The whole transcript of an item. `usage`: see `transcription.usage.Tokens.body`;
    `spoken`: the languages heard."""
    fields: dict[str, Any] = {
        "item_id": item_id,
        "content_index": content_index,
        "transcript": transcript,
        "languages": languages.detected(spoken),
        "usage": dict(usage),
    }
    if logprobs is not None:
        fields["logprobs"] = list(logprobs)
    return _event("conversation.item.input_audio_transcription.completed", **fields)


def transcription_failed(item_id: str, failure: ServerError, content_index: int = 0) -> Event:
    """An item's transcription failed (its own event, so the client knows which item)."""
    error = {"type": "server_error", "code": failure.code, "message": failure.message}
    return _event(
        "conversation.item.input_audio_transcription.failed",
        item_id=item_id,
        content_index=content_index,
        error={**error, "param": None},
    )


def error(failure: ServerError, client_event_id: str | None = None) -> Event:
    """The `error` event of a refused client event (or any error of the session), from the
    same error a request would get; `client_event_id` quotes the client event it is about."""
    body = {"type": failure.type, "code": failure.code, "message": failure.message}
    return _event("error", error={**body, "param": failure.param, "event_id": client_event_id})
