"""Decode any upload to 16 kHz mono PCM, in the proxy, before anything reaches vLLM.

PyAV (FFmpeg inside the wheel) finds the container from the bytes themselves, so neither the
filename nor the part's content type matters: the SDK sends `application/octet-stream`,
browsers `video/webm`. What goes upstream is always a compact 16 kHz mono PCM WAV, the rate
Qwen3-ASR's feature extractor works at.
"""

from __future__ import annotations

import contextlib
import logging
import struct
import wave
from dataclasses import dataclass
from typing import Any, BinaryIO, ClassVar

import av
import numpy as np
import numpy.typing as npt

from ..errors import invalid
from .stoppable import Stop

logger = logging.getLogger(__name__)

RATE = 16000
OPENAI_FORMATS = "flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, opus, wav, webm"
# Sample rates outside these bounds come from broken or hostile headers, and resampling them is
# what costs: a "1 Hz" WAV or a "100 MHz" one each made FFmpeg's resampler take about 1 GB.
# Real audio is 2 kHz (a few old codecs) up to DSD512's 2.8224 MHz once decoded.
MIN_RATE = 1000
MAX_RATE = 3_072_000
# The upload is the only thing read: demuxers that open other resources (an HLS playlist's
# segments, a concat script's files next to the server, the UDP ports an SDP description names,
# where FFmpeg would wait for packets forever) may open no protocol at all.
_OPEN_OPTIONS = {"protocol_whitelist": ""}
_WAV_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")


@dataclass(frozen=True)
class Audio:
    samples: npt.NDArray[np.int16]  # 16 kHz mono

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE

    def wav(self, start: int = 0, end: int | None = None) -> bytes:
        """Samples `start:end` as a 16-bit mono WAV file. Its 44-byte header is packed here:
        the `wave` module copies the samples twice more, on every request."""
        pcm = self.samples[start:end].astype("<i2", copy=False).tobytes()
        size = len(pcm)
        fmt = (16, 1, 1, RATE, RATE * 2, 2, 16)  # PCM, mono, 16 kHz, bytes/s, block, bits
        return _WAV_HEADER.pack(b"RIFF", 36 + size, b"WAVE", b"fmt ", *fmt, b"data", size) + pcm


def describe_seconds(seconds: float) -> str:
    """3725 -> '1 h 2 min 5 s', for messages people read."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{secs} s" if secs or not (hours or minutes) else "")
    return " ".join(part for part in parts if part)


def too_long(max_seconds: float) -> Exception:
    return invalid(
        f"The audio is longer than this server accepts ({describe_seconds(max_seconds)}: "
        "--max-audio-seconds, or --audio-budget-seconds where that is less). Split it, or ask "
        "the operator to raise the limit.",
        "file",
        code="audio_too_long",
    )


def _empty() -> Exception:
    return invalid("The audio file contains no audio (zero length).", "file", code="empty_audio")


def _undecodable(reason: str) -> Exception:
    return invalid(
        f"The audio file could not be decoded ({reason}). Supported formats: {OPENAI_FORMATS}.",
        "file",
        code="invalid_audio",
    )


def plain_wav(file: BinaryIO, max_seconds: float) -> Audio | None:
    """The samples of a WAV that already is 16 kHz mono 16-bit PCM, as they are; None (and
    the file rewound) for anything else. Voice clients mostly send exactly this, and reading
    it costs one copy where decoding and resampling it cost a few milliseconds.
    """
    limit = int(max_seconds * RATE)
    try:
        with wave.open(file, "rb") as wav:  # a file object passed in is left open
            plain = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, RATE)
            # The header's length is not trusted: streamed WAVs say 0 or 4 GB.
            data = wav.readframes(limit + 1) if plain and wav.getcomptype() == "NONE" else b""
    except (wave.Error, EOFError, RuntimeError, ValueError, struct.error):
        data = b""  # a header `wave` cannot follow (RuntimeError: a chunk it cannot skip)
    if len(data) < 2:  # not plain PCM, or a header with no data: PyAV's to judge
        file.seek(0)
        return None
    if len(data) // 2 > limit:
        raise too_long(max_seconds)
    samples = np.frombuffer(data, dtype="<i2", count=len(data) // 2).astype(np.int16, copy=False)
    return Audio(samples)


def decode(file: BinaryIO, max_seconds: float, stop: Stop | None = None) -> Audio:
    """Decode the first audio stream to 16 kHz mono int16, its channels mixed down. Blocking:
    run it in a thread; `stop` is asked after each frame, so that a request that is gone stops
    its decoding.

    Stops as soon as the audio runs past `max_seconds`, so a long file costs no more than the
    limit. A stream that breaks after some audio decoded keeps that audio (a recorder that was
    cut off mid-write), with a warning in the log. A stream whose rate, layout or sample format
    changes on the way (MP3s joined end to end) is decoded whole.
    """
    (audio,) = _decoded(file, max_seconds, stop, 0)
    return audio


def channels(
    file: BinaryIO, max_seconds: float, most: int, stop: Stop | None = None
) -> list[Audio]:
    """`decode`, each channel kept apart (a call recording's agent and customer), in the
    stream's order; more than `most` channels is a 400. A stream whose layout changes on the
    way is mixed to the layout it began with."""
    return _decoded(file, max_seconds, stop, most)


def _decoded(file: BinaryIO, max_seconds: float, stop: Stop | None, most: int) -> list[Audio]:
    """The one decoder: mixed down to mono (`most` 0), or each of at most `most` channels."""
    audio = plain_wav(file, max_seconds)
    if audio is not None:
        return [audio]
    try:
        container = av.open(file, mode="r", metadata_errors="ignore", options=_OPEN_OPTIONS)
    except (av.FFmpegError, ValueError) as exc:
        raise _undecodable(_reason(exc)) from exc
    with container:
        stream = _audio_stream(container, max_seconds, most)
        pcm = _Pcm(separate=most > 0)
        try:
            _read(container, stream, pcm, max_seconds, stop)
        except (av.FFmpegError, ValueError) as exc:
            if not pcm.expected:
                raise _undecodable(_reason(exc)) from exc
            logger.warning(
                "Audio stream broke after %d samples; keeping those: %s", pcm.expected, exc
            )
            with contextlib.suppress(av.FFmpegError, ValueError):
                pcm.flush()
    samples = np.frombuffer(pcm.data, dtype=np.int16).reshape(-1, pcm.channels)
    if len(samples) > int(max_seconds * RATE):
        raise too_long(max_seconds)
    if len(samples) == 0:
        raise _empty()
    return [Audio(np.ascontiguousarray(samples[:, index])) for index in range(pcm.channels)]


def _audio_stream(container: Any, max_seconds: float, most: int) -> av.AudioStream:
    """The container's first audio stream, if its header is one worth decoding."""
    stream: av.AudioStream | None = next(iter(container.streams.audio), None)
    if stream is None:
        raise _undecodable("it holds no audio stream")
    declared = _declared_rate(stream)
    if declared and not MIN_RATE <= declared <= MAX_RATE:
        raise _undecodable(_implausible(declared))
    if container.duration is not None and container.duration / av.time_base > max_seconds + 1:
        raise too_long(max_seconds)
    count = stream.codec_context.channels if stream.codec_context is not None else 0
    if most and count > most:
        raise too_many_channels(count, most)
    return stream


def too_many_channels(count: int, most: int) -> Exception:
    return invalid(
        f"The audio has {count} channels; multichannel transcribes at most {most}.",
        "file",
        code="too_many_channels",
    )


def _read(
    container: Any, stream: av.AudioStream, pcm: _Pcm, max_seconds: float, stop: Stop | None
) -> None:
    """Every frame of `stream` into `pcm`, within `max_seconds`."""
    limit = int(max_seconds * RATE)
    for frame in container.decode(stream):
        if stop is not None:
            stop.check()
        rate = frame.sample_rate
        if not MIN_RATE <= rate <= MAX_RATE:
            raise ValueError(_implausible(rate))
        # Checked before resampling: one long frame at a low rate is hours of output.
        if pcm.expected + frame.samples * RATE // rate > limit + RATE:
            raise too_long(max_seconds)
        pcm.add(frame)
    pcm.flush()


class _Pcm:
    """Decoded frames in, 16 kHz s16 out: mono, or (`separate`) in the first frame's layout,
    interleaved. Frames wait in a FIFO and are resampled in blocks: FFmpeg's resampler costs
    about as much per call as per sample, and called once per MP3 frame it took longer than
    decoding the MP3. The samples out are the same either way.
    """

    BLOCK = 16384  # source samples per resampler call

    def __init__(self, separate: bool = False) -> None:
        self.data = bytearray()  # grows in place: no second copy of hours of samples at the end
        self.expected = 0  # output samples a channel of the frames added so far
        self.separate = separate
        self.layout = "mono"  # what comes out; with `separate`, the first frame's
        self.channels = 1
        self._fifo: av.AudioFifo | None = None
        self._resampler: av.AudioResampler | None = None
        self._source: tuple[str, str, int] | None = None  # what the two were set up for

    def add(self, frame: av.AudioFrame) -> None:
        source = (frame.format.name, frame.layout.name, frame.sample_rate)
        if self.separate and not self.expected:
            self.layout, self.channels = frame.layout.name, frame.layout.nb_channels
        fifo = self._fifo
        if fifo is None or source != self._source:  # MP3s joined end to end change midway
            self.flush()
            fifo = self._fifo = av.AudioFifo()
            self._resampler = av.AudioResampler(format="s16", layout=self.layout, rate=RATE)
            self._source = source
        frame.pts = None  # joined or damaged streams have gaps the FIFO would refuse
        fifo.write(frame)
        self.expected += frame.samples * RATE // frame.sample_rate
        if fifo.samples >= self.BLOCK:
            self._resample(fifo.read())

    def flush(self) -> None:
        """Resample what the FIFO and the resampler hold. A second call is a no-op."""
        fifo, self._fifo, self._source = self._fifo, None, None
        if fifo is not None and fifo.samples:
            self._resample(fifo.read())
        self._resample(None)
        self._resampler = None

    def _resample(self, frame: av.AudioFrame | None) -> None:
        if self._resampler is None:
            return
        for out in self._resampler.resample(frame):
            # packed s16: 2 bytes a sample of each channel
            self.data += memoryview(out.planes[0])[: out.samples * 2 * self.channels]


class Resampler:
    """PCM arriving in chunks at `rate` (`width` bytes a sample: 8-bit unsigned, 16- or 32-bit
    signed; `channels` interleaved), as 16 kHz mono samples. A live stream: the resampler keeps
    its state between chunks, so their seams leave no clicks. Realtime sends 16-bit mono; a
    Wyoming client may send any of these."""

    # FFmpeg's packed format and the samples' dtype (little-endian, as Wyoming and WAV send
    # them), by width
    FORMATS: ClassVar[dict[int, tuple[str, np.dtype[Any]]]] = {
        1: ("u8", np.dtype("u1")),
        2: ("s16", np.dtype("<i2")),
        4: ("s32", np.dtype("<i4")),
    }

    def __init__(self, rate: int, width: int = 2, channels: int = 1) -> None:
        self.rate = rate
        self.format, self._dtype = self.FORMATS[width]
        self._native = self._dtype.newbyteorder("=")  # what PyAV's frames take
        self.layout = {1: "mono", 2: "stereo"}.get(channels, f"{channels}c")
        plain = (rate, width, channels) == (RATE, 2, 1)
        self._resampler = (
            None if plain else av.AudioResampler(format="s16", layout="mono", rate=RATE)
        )

    def __call__(self, pcm: bytes) -> npt.NDArray[np.int16]:
        samples = np.frombuffer(pcm, dtype=self._dtype).astype(self._native, copy=False)
        if self._resampler is None:
            return samples.astype(np.int16, copy=False)
        frame = av.AudioFrame.from_ndarray(
            samples.reshape(1, -1), format=self.format, layout=self.layout
        )
        frame.sample_rate = self.rate
        return _samples(self._resampler.resample(frame))


class FrameResampler:
    """Decoded frames of any format, layout and rate (a WebRTC call's Opus, 48 kHz stereo),
    as 16 kHz mono samples; a live stream, as `Resampler`'s."""

    def __init__(self) -> None:
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)

    def __call__(self, frame: av.AudioFrame) -> npt.NDArray[np.int16]:
        return _samples(self._resampler.resample(frame))


def _samples(frames: list[av.AudioFrame]) -> npt.NDArray[np.int16]:
    """A resampler's s16 mono frames as one array."""
    out = [
        np.frombuffer(memoryview(done.planes[0])[: done.samples * 2], np.int16) for done in frames
    ]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int16)


def _declared_rate(stream: av.AudioStream) -> int:
    """The stream's rate as its header says; 0 when unknown (or FFmpeg has no decoder for it)."""
    context = stream.codec_context
    return context.sample_rate if context is not None else 0


def _implausible(rate: int) -> str:
    return f"its sample rate of {rate} Hz is not one audio is made at"


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "strerror", None) or exc).strip() or type(exc).__name__
