"""`noise_reduction` as clients send it: accepted in both dialects, echoed as what is applied
(nothing: no denoiser earned its place, docs/performance.md#noise-reduction), and the session's
speech in noise still cut into its turns."""

from __future__ import annotations

import numpy as np
from openai.types.realtime import SessionUpdatedEvent
from openai.types.realtime.realtime_transcription_session_create_request import (
    RealtimeTranscriptionSessionCreateRequest,
)

from tests.fixtures.speech import scene
from tests.integration.realtime.test_realtime import (
    completed,
    of,
    send,
    serving,
    session,
    stream,
    until,
)


async def test_ga_noise_reduction_is_accepted_echoed_as_applied_and_turns_are_found() -> None:
    noisy = scene(snr_db=10, noise_kind="white").samples  # two sentences, white noise at 10 dB
    times = np.arange(len(noisy) * 3 // 2) / 24000
    pcm = np.interp(times, np.arange(len(noisy)) / 16000, noisy).astype("<i2").tobytes()
    audio_input = {
        "noise_reduction": {"type": "far_field"},
        "turn_detection": {"type": "server_vad"},
    }
    with serving() as url:
        async with session(url) as ws:
            update = {"type": "transcription", "audio": {"input": audio_input}}
            await send(ws, "session.update", session=update)
            await stream(ws, pcm)
            events = await until(ws, completed(2), seconds=30)
    updated = SessionUpdatedEvent.model_validate(events[0])
    assert isinstance(updated.session, RealtimeTranscriptionSessionCreateRequest)
    assert updated.session.audio is not None
    assert updated.session.audio.input is not None
    assert updated.session.audio.input.noise_reduction is None
    assert len(of(events, "input_audio_buffer.speech_started")) == 2


async def test_beta_input_audio_noise_reduction_is_accepted_and_echoed_as_applied() -> None:
    with serving() as url:
        async with session(url, additional_headers={"OpenAI-Beta": "realtime=v1"}) as ws:
            update = {"input_audio_noise_reduction": {"type": "near_field"}}
            await send(ws, "transcription_session.update", session=update)
            [answer] = await until(ws, lambda events: len(events) == 1)
    assert answer["type"] == "transcription_session.updated"
    assert answer["session"]["input_audio_noise_reduction"] is None
