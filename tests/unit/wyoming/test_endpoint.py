"""Where a Wyoming command ends without `audio-stop`: Silero on espeak-ng speech and silence."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from wyoming.asr import Transcribe, VadSensitivity
from wyoming.audio import AudioChunk

from qwen3_asr_server.entrypoints.wyoming.command import Command
from qwen3_asr_server.entrypoints.wyoming.endpoint import (
    MAX_SPEECH_SECONDS,
    QUIET_SECONDS,
    Endpoint,
    silence_ms,
)
from qwen3_asr_server.model.catalog import Catalog
from qwen3_asr_server.speech.onnx_models import Shared
from qwen3_asr_server.speech.silero import SpeechModel
from tests.fixtures.speech import noise_only, spoken

RATE = 16_000
SPEECH = Shared(SpeechModel)
QUIET = round(QUIET_SECONDS * RATE)
STEP = RATE // 10  # 100 ms a chunk, as a satellite sends them
TOLERANCE = 0.3  # seconds Silero may hear an edge of speech from where it was put


def pcm(pattern: Sequence[tuple[float, bool]]) -> npt.NDArray[np.int16]:
    """(seconds, voiced) pieces: espeak-ng's voice, or digital silence, as 16 kHz samples."""
    return np.round(spoken(pattern) * 32767).astype(np.int16)


async def end_of(
    samples: npt.NDArray[np.int16], sensitivity: str | None = None, step: int = STEP
) -> int | None:
    """The sample the command ends at, fed `step` samples at a time; None: not heard."""
    endpoint = Endpoint(SPEECH, sensitivity)
    for start in range(0, len(samples), step):
        if await endpoint.hear(samples[start : start + step]):
            return endpoint.end
    return None


@pytest.mark.parametrize(
    ("sensitivity", "ms"),
    [
        (None, 700),
        ("default", 700),
        (VadSensitivity.RELAXED, 1250),
        ("relaxed", 1250),
        ("aggressive", 250),
        ("eager", 700),  # a value this server does not know: the default
    ],
)
def test_sensitivities_are_home_assistants_silences(sensitivity: str | None, ms: int) -> None:
    assert silence_ms(sensitivity) == ms


async def test_a_command_ends_at_the_pause_after_its_speech() -> None:
    end = await end_of(pcm([(1.0, False), (2.5, True), (3.0, False)]))
    assert end is not None
    assert abs(end / RATE - (3.5 + 0.7)) <= TOLERANCE  # the default pause heard after it


async def test_silence_before_speech_does_not_end_it() -> None:
    end = await end_of(pcm([(5.0, False), (2.0, True), (2.0, False)]))
    assert end is not None
    assert end / RATE > 7.0  # after the speech, not in the 5 s before it


async def test_speech_that_does_not_pause_is_not_cut() -> None:
    assert await end_of(pcm([(0.5, False), (6.0, True)])) is None


async def test_no_speech_ends_at_the_quiet_bound() -> None:
    assert await end_of(noise_only(QUIET_SECONDS + 5, -40)) == QUIET  # a room's hiss
    late = pcm([(QUIET_SECONDS + 0.5, False), (2.0, True), (2.0, False)])
    assert await end_of(late) == QUIET  # speech after the bound comes too late


async def test_speech_that_never_pauses_ends_at_its_bound() -> None:
    end = await end_of(pcm([(1.0, False), (MAX_SPEECH_SECONDS + 5, True)]))
    assert end is not None
    assert abs(end / RATE - (1.0 + MAX_SPEECH_SECONDS)) <= TOLERANCE


@pytest.mark.parametrize(
    "pattern",
    [
        [(1.0, False), (2.5, True), (3.0, False)],
        [(QUIET_SECONDS - 0.05, False), (2.0, True), (2.0, False)],  # at the quiet bound
        [(QUIET_SECONDS + 0.5, False), (2.0, True), (2.0, False)],  # too late
        [(QUIET_SECONDS + 1.0, False)],
    ],
)
async def test_the_end_does_not_depend_on_the_chunks(
    pattern: Sequence[tuple[float, bool]],
) -> None:
    samples = pcm(pattern)
    ends = {await end_of(samples, step=step) for step in (160, 1600, 3333, len(samples))}
    assert len(ends) == 1
    assert None not in ends


async def test_sensitivity_decides_whether_a_short_pause_ends_it() -> None:
    samples = pcm([(0.5, False), (2.0, True), (0.7, False), (2.0, True), (2.0, False)])
    aggressive = await end_of(samples, "aggressive")
    relaxed = await end_of(samples, "relaxed")
    assert aggressive is not None
    assert relaxed is not None
    assert aggressive / RATE < 2.5 + 0.7  # within the pause
    assert relaxed / RATE > 2.5 + 0.7 + 2.0 + 1.25  # after the second stretch of speech


async def test_the_commands_audio_ends_where_its_end_was_heard() -> None:
    command = Command(
        Catalog("tiny", [], 0.0), SPEECH, Transcribe(vad_sensitivity="relaxed"), max_seconds=60.0
    )
    samples = pcm([(0.5, False), (2.0, True), (4.0, False)])
    assert await command.hear(AudioChunk(RATE, 2, 1, samples.tobytes()))  # in one chunk
    assert abs(command.audio().duration - (2.5 + 1.25)) <= TOLERANCE  # not the rest of it
