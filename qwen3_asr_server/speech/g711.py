"""G.711 telephone audio (mu-law, A-law) as it arrives live, in 16 kHz 16-bit samples.

G.711 is what phone lines carry (Twilio Media Streams send mu-law): 8 kHz mono, one byte a
sample, each byte a logarithmically quantised 14-bit (mu-law) or 13-bit (A-law) value. FFmpeg's
own decoders expand the bytes (by G.711's own tables) and its resampler brings them
to the 16 kHz the rest of the server hears, keeping its state between chunks as
`audio.Resampler` does for PCM.
"""

from __future__ import annotations

from typing import cast

import av
import numpy as np
import numpy.typing as npt

from . import audio

RATE = 8_000  # G.711's only rate
CODECS = {"g711_ulaw": "pcm_mulaw", "g711_alaw": "pcm_alaw"}  # FFmpeg's decoder, by encoding

Samples = npt.NDArray[np.int16]


class Decoder:
    """Chunks of `encoding` (a key of CODECS) in, samples out: `expand` gives them at 8 kHz,
    a call at 16 kHz."""

    def __init__(self, encoding: str) -> None:
        codec = cast(av.AudioCodecContext, av.CodecContext.create(CODECS[encoding], "r"))
        codec.sample_rate = RATE
        codec.layout = "mono"
        self._codec = codec
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=audio.RATE)

    def expand(self, data: bytes) -> Samples:
        """The 8 kHz 16-bit samples the bytes stand for, one a byte."""
        return _joined([frame.to_ndarray()[0] for frame in self._frames(data)])

    def __call__(self, data: bytes) -> Samples:
        return _joined(
            [
                np.frombuffer(memoryview(done.planes[0])[: done.samples * 2], dtype=np.int16)
                for frame in self._frames(data)
                for done in self._resampler.resample(frame)
            ]
        )

    def _frames(self, data: bytes) -> list[av.AudioFrame]:
        if not data:  # an empty packet would tell the decoder the stream has ended
            return []
        return list(self._codec.decode(av.Packet(data)))


def _joined(parts: list[npt.NDArray[np.int16]]) -> Samples:
    return np.concatenate(parts).astype(np.int16, copy=False) if parts else np.zeros(0, np.int16)
