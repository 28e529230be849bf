"""G.711 telephone audio expanded, checked against the standard's values and FFmpeg's encoder."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from qwen3_asr_server.speech.g711 import Decoder
from tests.fixtures.speech import g711

# Bytes with the values G.711's expansion rule gives them (16-bit): mu-law's 0xFF and 0x7F are
# +0 and -0, 0x80 and 0x00 its largest magnitudes, 0xFE and 0x7E the next to zero; A-law's
# 0xD5 and 0x55 are its smallest magnitudes, 0xD4 and 0x54 the next, 0xAA and 0x2A its largest
KNOWN = {
    "g711_ulaw": (b"\xff\x7f\x80\x00\xfe\x7e", [0, 0, 32124, -32124, 8, -8]),
    "g711_alaw": (b"\xd5\x55\xaa\x2a\xd4\x54", [8, -8, 32256, -32256, 24, -24]),
}


def sine(hz: float, seconds: float, rate: int, amplitude: float = 16000) -> npt.NDArray[np.int16]:
    times = np.arange(round(seconds * rate)) / rate
    return np.round(np.sin(2 * np.pi * hz * times) * amplitude).astype(np.int16)


@pytest.mark.parametrize("encoding", list(KNOWN))
def test_known_bytes_expand_to_the_standards_values(encoding: str) -> None:
    data, values = KNOWN[encoding]
    assert Decoder(encoding).expand(data).tolist() == values


@pytest.mark.parametrize("encoding", list(KNOWN))
def test_an_encoded_sine_comes_back_within_the_quantisation_error(encoding: str) -> None:
    original = sine(440, 1.0, 8000)
    data = g711(original, encoding)
    assert len(data) == len(original)  # one byte a sample
    expanded = Decoder(encoding).expand(data).astype(np.float64)
    error = expanded - original
    # logarithmic steps: 16 to an octave, so half a step is at most 1/32 of the value, plus
    # the smallest steps near zero
    assert np.all(np.abs(error) <= np.abs(original) / 32 + 16)
    snr = 10 * np.log10(np.mean(original.astype(np.float64) ** 2) / np.mean(error**2))
    assert snr > 35  # G.711's ~38 dB for a loud sine


def test_chunks_come_out_at_16_khz_as_one_stream() -> None:
    """Twilio's 20 ms frames, one at a time: 320 samples at 16 kHz each, and the seams are not
    heard (the same as the stream decoded whole)."""
    original = sine(300, 1.0, 8000)
    data = g711(original, "g711_ulaw")
    live = Decoder("g711_ulaw")
    pieces = [live(data[start : start + 160]) for start in range(0, len(data), 160)]
    pieces.append(live(b""))  # an empty chunk changes nothing
    joined = np.concatenate(pieces)
    whole = Decoder("g711_ulaw")(data)
    assert np.array_equal(joined, whole[: len(joined)])
    assert abs(len(joined) - 16000) <= 64  # the resampler's delay
    # a 300 Hz tone at 16 kHz: its peak frequency is where it was
    spectrum = np.abs(np.fft.rfft(joined.astype(np.float64)))
    assert np.argmax(spectrum) * 16000 / len(joined) == pytest.approx(300, abs=2)
