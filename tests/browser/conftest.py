"""One headless Chromium for every browser test, its fake microphone speaking two sentences;
and, for the one test of a network that lets no UDP through, a second that WebRTC gets no
UDP from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.audio import pcm_wav
from tests.fixtures.browser import Browser, available
from tests.fixtures.speech import RATE, sentence


def two_sentences_then_quiet() -> bytes:
    """The fake microphone's sound (looped by Chromium): sentence 1, a 1.5 s pause,
    sentence 2, 2.5 s of silence; 16 kHz 16-bit mono at about -20 dBFS."""
    parts = [np.zeros(RATE // 2), sentence(1), np.zeros(RATE * 3 // 2), sentence(2)]
    signal = np.concatenate([*parts, np.zeros(RATE * 5 // 2)])
    signal *= 0.1 / np.sqrt(np.mean(signal[signal != 0] ** 2))
    return pcm_wav(np.round(signal * 32767).astype("<i2").tobytes(), rate=RATE)


def start(folder: Path, preferences: dict[str, str] | None = None) -> Browser:
    assert available(), "Chromium and chromedriver are needed: bash scripts/test.sh installs them"
    microphone = folder / "microphone.wav"
    microphone.write_bytes(two_sentences_then_quiet())
    downloads = folder / "downloads"
    downloads.mkdir()
    return Browser(downloads, microphone, preferences)


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    chromium = start(tmp_path_factory.mktemp("browser"))
    yield chromium
    chromium.quit()


@pytest.fixture
def browser_without_udp(tmp_path: Path) -> Iterator[Browser]:
    """Chromium whose WebRTC offers no candidates (no UDP, no proxy to send it through), so a
    call's ICE has nothing to try and never connects: as where only the HTTP port is reached."""
    chromium = start(tmp_path, {"webrtc.ip_handling_policy": "disable_non_proxied_udp"})
    yield chromium
    chromium.quit()
