"""One headless Chromium for every browser test, its fake microphone speaking two sentences."""

from __future__ import annotations

from collections.abc import Iterator

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


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    assert available(), "Chromium and chromedriver are needed: bash scripts/test.sh installs them"
    folder = tmp_path_factory.mktemp("browser")
    microphone = folder / "microphone.wav"
    microphone.write_bytes(two_sentences_then_quiet())
    downloads = folder / "downloads"
    downloads.mkdir()
    chromium = Browser(downloads, microphone)
    yield chromium
    chromium.quit()
