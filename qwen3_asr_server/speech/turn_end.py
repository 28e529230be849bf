"""Smart Turn v3.2: the probability that a speaker has finished their turn, from the sound of
its last 8 s (intonation, a trailing "and...", a word cut short), where a VAD hears only
that the speaker has stopped.

The network is pipecat's (BSD-2-Clause), an 8.7 MB ONNX file inside the `pipecat-ai` wheel
(extra `[turn]`), or any copy of it named by path. Its input is Whisper's log-mel spectrogram
(80 mel bands, 10 ms frames) of the last 8 s of 16 kHz audio, the waveform first scaled to zero
mean and unit variance; computed here with numpy, as Whisper's feature extractor computes it
(the tests hold it to pipecat's own computation).

One call costs ~45 ms of one core: callers run it off the event loop. One model serves every
session of a process (`onnx_models.Shared`): ONNX Runtime runs one session from several threads
at once.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view
from scipy.signal import get_window

from ..errors import LaunchError
from . import onnx_models
from .audio import RATE
from .silero import FULL_SCALE

MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
WHEEL_PATH = f"pipecat/audio/turn/smart_turn/data/{MODEL_FILE}"
INSTALL = "pip install 'qwen3-asr-server[turn]'"
SECONDS = 8  # what the network hears: the end of the turn, the start padded with silence
FFT = 400  # 25 ms windows
HOP = 160  # 10 ms apart
BANDS = 80


def slaney_mel(hertz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Slaney's mel scale (librosa's default, Whisper's): linear to 1 kHz, logarithmic above."""
    linear = 3.0 * hertz / 200.0
    above = 15.0 + np.log(np.maximum(hertz, 1e-9) / 1000.0) * 27.0 / np.log(6.4)
    return np.where(hertz >= 1000.0, above, linear)


def slaney_hertz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The inverse of `slaney_mel`."""
    above = 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0)
    return np.where(mel >= 15.0, above, 200.0 * mel / 3.0)


def mel_filters() -> npt.NDArray[np.float64]:
    """Whisper's filterbank: BANDS triangles evenly spaced in mels from 0 to 8 kHz, each of
    unit area (Slaney's norm), over the FFT's bins: shape (BANDS, FFT // 2 + 1)."""
    edges = slaney_hertz(np.linspace(0.0, slaney_mel(np.array(RATE / 2.0)), BANDS + 2))
    bins = np.linspace(0.0, RATE / 2.0, FFT // 2 + 1)
    rising = (bins - edges[:-2, None]) / np.diff(edges)[:-1, None]
    falling = (edges[2:, None] - bins) / np.diff(edges)[1:, None]
    triangles = np.maximum(0.0, np.minimum(rising, falling))
    return triangles * (2.0 / (edges[2:] - edges[:-2]))[:, None]


def features(
    samples: npt.NDArray[np.float32], filters: npt.NDArray[np.float64]
) -> npt.NDArray[np.float32]:
    """The network's input for 16 kHz audio scaled to -1..1: the log-mel spectrogram of its last
    SECONDS (silence before it if shorter), shape (BANDS, SECONDS * 100)."""
    length = SECONDS * RATE
    audio = np.zeros(length, dtype=np.float32)
    tail = samples[-length:]
    audio[length - len(tail) :] = tail
    audio = (audio - audio.mean()) / np.sqrt(audio.var() + 1e-7)
    padded = np.pad(audio.astype(np.float64), FFT // 2, mode="reflect")
    window: npt.NDArray[np.float64] = get_window("hann", FFT)  # periodic, as Whisper's
    frames = sliding_window_view(padded, FFT)[::HOP] * window
    power: npt.NDArray[np.float64] = np.abs(np.fft.rfft(frames, axis=-1)) ** 2
    logs: npt.NDArray[np.float64] = np.log10(np.maximum(filters @ power.T, 1e-10))[:, :-1]
    logs = np.maximum(logs, logs.max() - 8.0)
    return ((logs + 4.0) / 4.0).astype(np.float32)


def model_path(path: Path | None = None) -> Path:
    """The model file: `path`, or the one in the installed pipecat wheel (found by its
    distribution's file list: importing pipecat would load its logging and print a banner)."""
    if path is not None:
        if not path.is_file():
            raise LaunchError(f"the end-of-turn model {path} is not a file")
        return path
    try:
        found = Path(str(metadata.distribution("pipecat-ai").locate_file(WHEEL_PATH)))
    except metadata.PackageNotFoundError:
        raise LaunchError(
            f"the end-of-turn model (Smart Turn) ships in pipecat-ai: {INSTALL}, "
            f"or give the path of {MODEL_FILE}"
        ) from None
    if not found.is_file():
        raise LaunchError(f"this pipecat-ai holds no {MODEL_FILE}: {INSTALL}")
    return found


class TurnEnd:
    """Smart Turn, called with the samples of an utterance so far (16 kHz, int16): the
    probability, 0..1, that its speaker has finished. ~45 ms of CPU a call, in the caller's
    thread: never call it on the event loop."""

    def __init__(self, path: Path | None = None) -> None:
        self._session: Any = onnx_models.session_of(str(model_path(path)))
        self._filters = mel_filters()

    def __call__(self, samples: npt.NDArray[np.int16]) -> float:
        scaled = samples.astype(np.float32) / np.float32(FULL_SCALE)
        heard = features(scaled, self._filters)[None]
        (probability,) = self._session.run(None, {"input_features": heard})
        return float(probability.reshape(-1)[0])
