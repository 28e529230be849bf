"""A Wyoming command's language and audio: every format converted to 16 kHz mono, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk

from qwen3_asr_server.entrypoints.wyoming.command import Command, Refusal, language_of
from qwen3_asr_server.entrypoints.wyoming.info import info
from qwen3_asr_server.model.catalog import Catalog
from qwen3_asr_server.model.languages import SUPPORTED
from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.speech.onnx_models import Shared
from qwen3_asr_server.speech.silero import SpeechModel

CATALOG = Catalog("tiny", ["whisper-1"], 0.0)
SPEECH = Shared(SpeechModel)
MAX = Settings().wyoming_max_audio_seconds


def _tone(seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return np.sin(2 * np.pi * 440 * t) * 0.25


def _pcm(signal: np.ndarray, width: int, channels: int) -> bytes:
    """`signal` (-1..1) as little-endian PCM of `width` bytes, on every channel."""
    if width == 1:
        samples = (signal * 127 + 128).astype("u1")
    else:
        samples = (signal * (2 ** (8 * width - 1) - 1)).astype(f"<i{width}")
    return np.repeat(samples, channels).tobytes()


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize(("rate", "channels"), [(16000, 1), (22050, 2), (48000, 6), (8000, 1)])
def test_any_format_becomes_16khz_mono(rate: int, width: int, channels: int) -> None:
    heard = Command(CATALOG, SPEECH, max_seconds=MAX)
    pcm = _pcm(_tone(1.0, rate), width, channels)
    step = rate // 10 * width * channels
    for start in range(0, len(pcm), step):
        heard.add(AudioChunk(rate, width, channels, pcm[start : start + step]))
    samples = heard.audio().samples
    assert samples.dtype == np.int16
    assert abs(len(samples) - 16000) <= 64  # the resampler's delay at most
    peak = np.abs(samples[1000:-1000]).max() / 32767
    assert 0.2 < peak < 0.3  # the tone's level, whatever its width and channels


def test_a_change_of_format_midway_is_followed() -> None:
    heard = Command(CATALOG, SPEECH, max_seconds=MAX)
    heard.add(AudioChunk(16000, 2, 1, _pcm(_tone(0.5, 16000), 2, 1)))
    heard.add(AudioChunk(44100, 2, 2, _pcm(_tone(0.5, 44100), 2, 2)))
    assert abs(heard.audio().duration - 1.0) < 0.01


@pytest.mark.parametrize(
    ("chunk", "code"),
    [
        (AudioChunk(16000, 2, 1, b"\0\0\0"), "bad-audio"),
        (AudioChunk(16000, 4, 2, b"\0" * 12), "bad-audio"),
        (AudioChunk(16000, 3, 1, b"\0" * 3), "unsupported-audio"),
        (AudioChunk(16000, 2, 0, b""), "unsupported-audio"),
        (AudioChunk(16000, 2, 9, b"\0" * 18), "unsupported-audio"),
        (AudioChunk(10, 2, 1, b"\0\0"), "unsupported-audio"),
    ],
)
def test_audio_it_cannot_read_is_refused(chunk: AudioChunk, code: str) -> None:
    with pytest.raises(Refusal) as refused:
        Command(CATALOG, SPEECH, max_seconds=MAX).add(chunk)
    assert refused.value.code == code


def test_audio_past_the_bound_is_refused() -> None:
    heard = Command(CATALOG, SPEECH, max_seconds=1.0)
    heard.add(AudioChunk(16000, 2, 1, bytes(32000)))
    with pytest.raises(Refusal) as refused:
        heard.add(AudioChunk(16000, 2, 1, b"\0\0"))
    assert refused.value.code == "audio-too-long"


def test_no_audio_is_an_empty_recording() -> None:
    assert Command(CATALOG, SPEECH, max_seconds=MAX).audio().duration == 0


@pytest.mark.parametrize(
    ("asked", "code"),
    [
        (None, None),
        ("", None),
        ("en", "en"),
        ("en-US", "en"),
        ("pt_BR", "pt"),
        ("French", "fr"),
        ("yue", "yue"),
        ("fil", "fil"),
        ("zh-Hant", "zh"),
    ],
)
def test_languages_are_codes_names_or_locales(asked: str | None, code: str | None) -> None:
    found = language_of(asked)
    assert (found.code if found else None) == code


def test_an_unknown_language_or_model_is_refused() -> None:
    with pytest.raises(Refusal) as refused:
        Command(CATALOG, SPEECH, Transcribe(language="tlh"), max_seconds=MAX)
    assert refused.value.code == "unsupported-language"
    with pytest.raises(Refusal) as refused:
        Command(CATALOG, SPEECH, Transcribe(name="large-v3"), max_seconds=MAX)
    assert refused.value.code == "model-not-found"
    assert (
        Command(
            CATALOG, SPEECH, Transcribe(name="whisper-1", language="de"), max_seconds=MAX
        ).language
        is not None
    )


def test_info_lists_the_served_model_and_every_language() -> None:
    [program] = info(Settings(served_model_name="qwen3-asr")).asr
    [model] = program.models
    assert model.name == "qwen3-asr"
    assert model.languages == [language.code for language in SUPPORTED]
    assert program.supports_transcript_streaming
    assert not program.requires_external_vad  # the server hears where a command ends
