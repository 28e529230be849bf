"""A session's input audio buffer: the stream's 16 kHz samples, addressed by stream position.

A position counts samples from the start of the session, so that VAD events, commits and
live relays agree on where audio lies however much of it was dropped since; only what may
still be committed is kept (`trim`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

SAMPLE_BYTES = 2  # 16-bit PCM


class AudioBuffer:
    def __init__(self) -> None:
        self._data = bytearray()  # samples from `_base` on
        self._base = 0  # stream position of the first sample held
        self.heard = 0  # samples received in the whole session: the stream's end

    @property
    def held_bytes(self) -> int:
        return len(self._data)

    def append(self, samples: npt.NDArray[np.int16]) -> None:
        self._data += samples.tobytes()
        self.heard += len(samples)

    def samples(self, start: int, end: int) -> npt.NDArray[np.int16]:
        """The audio from stream position `start` (or the oldest held) to `end`."""
        begin = (max(start, self._base) - self._base) * SAMPLE_BYTES
        stop = (end - self._base) * SAMPLE_BYTES
        return np.frombuffer(bytes(self._data[begin:stop]), dtype=np.int16)

    def trim(self, keep_from: int) -> None:
        """Drop the audio before stream position `keep_from`."""
        drop = min(keep_from, self.heard) - self._base
        if drop > 0:
            del self._data[: drop * SAMPLE_BYTES]
            self._base += drop
