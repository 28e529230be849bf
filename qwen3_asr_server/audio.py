"""Decode any upload to 16 kHz mono PCM, in the proxy, before anything reaches vLLM.

PyAV (FFmpeg inside the wheel) finds the container from the bytes themselves, so neither the
filename nor the part's content type matters: the SDK sends `application/octet-stream`,
browsers `video/webm`. What goes upstream is always a compact 16 kHz mono PCM WAV, the rate
Qwen3-ASR's feature extractor works at.
"""

from __future__ import annotations

import io
import logging
import wave
from dataclasses import dataclass
from typing import BinaryIO

import av
import numpy as np
import numpy.typing as npt

from .errors import invalid

logger = logging.getLogger(__name__)

RATE = 16000
OPENAI_FORMATS = "flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, opus, wav, webm"


@dataclass(frozen=True)
class Audio:
    samples: npt.NDArray[np.int16]  # 16 kHz mono

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE

    def wav(self, start: int = 0, end: int | None = None) -> bytes:
        """Samples `start:end` as a 16-bit mono WAV file."""
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE)
            out.writeframes(self.samples[start:end].astype("<i2", copy=False).tobytes())
        return buffer.getvalue()


def describe_seconds(seconds: float) -> str:
    """3725 -> '1 h 2 min 5 s', for messages people read."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{secs} s" if secs or not (hours or minutes) else "")
    return " ".join(part for part in parts if part)


def _too_long(max_seconds: float) -> Exception:
    return invalid(
        f"The audio is longer than this server accepts ({describe_seconds(max_seconds)}, "
        "--max-audio-seconds). Split it, or ask the operator to raise the limit.",
        "file",
        code="audio_too_long",
    )


def _undecodable(reason: str) -> Exception:
    return invalid(
        f"The audio file could not be decoded ({reason}). Supported formats: {OPENAI_FORMATS}.",
        "file",
        code="invalid_audio",
    )


def decode(file: BinaryIO, max_seconds: float) -> Audio:
    """Decode the first audio stream to 16 kHz mono int16. Blocking: run it in a thread.

    Stops as soon as the audio runs past `max_seconds`, so a long file costs no more than the
    limit. A stream that breaks after some audio decoded keeps that audio (a recorder that was
    cut off mid-write), with a warning in the log.
    """
    try:
        container = av.open(file, mode="r", metadata_errors="ignore")
    except (av.FFmpegError, ValueError) as exc:
        raise _undecodable(_reason(exc)) from exc
    with container:
        stream = next(iter(container.streams.audio), None)
        if stream is None:
            raise _undecodable("it holds no audio stream")
        if container.duration is not None and container.duration / av.time_base > max_seconds + 1:
            raise _too_long(max_seconds)
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        limit = int(max_seconds * RATE)
        chunks: list[npt.NDArray[np.int16]] = []
        total = 0
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(_mono_s16(out))
                    total += out.samples
                if total > limit:
                    raise _too_long(max_seconds)
            chunks.extend(_mono_s16(out) for out in resampler.resample(None))
        except (av.FFmpegError, ValueError) as exc:
            if not chunks:
                raise _undecodable(_reason(exc)) from exc
            logger.warning("Audio stream broke after %d samples; keeping those: %s", total, exc)
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    if len(samples) > limit:
        raise _too_long(max_seconds)
    if len(samples) == 0:
        raise invalid("The audio file contains no audio (zero length).", "file", code="empty_audio")
    return Audio(samples)


def _mono_s16(frame: av.AudioFrame) -> npt.NDArray[np.int16]:
    return np.asarray(frame.to_ndarray(), dtype=np.int16).reshape(-1)


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "strerror", None) or exc).strip() or type(exc).__name__
