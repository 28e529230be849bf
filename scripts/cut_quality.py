#!/usr/bin/env python3
"""Where long recordings are cut, in noise: the server's energy plan against Silero VAD.

Builds `--minutes` of the tests' two espeak-ng sentences (`tests/fixtures/speech.py`) in
random order with pauses of 0.3-1.5 s, speech at -20 dBFS, clean and in pink noise at each
`--snr`; cuts it with `segmentation.split` (what uploads get) and with Silero's speech runs
(the Realtime VAD) grouped up to 30 s and cut mid-pause; counts the piece edges that fall
inside a sentence (by more than 50 ms) and the CPU each costs per second of audio.

    .cache/test-venv/bin/python scripts/cut_quality.py --minutes 10 --snr 20,10
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server import segmentation  # noqa: E402
from qwen3_asr_server.realtime.vad import SpeechDetector, SpeechModel, VadEvent  # noqa: E402
from tests.fixtures.speech import noise, rms, sentence  # noqa: E402

RATE = 16_000
WINDOW_SECONDS = 30.0
MARGIN = round(0.05 * RATE)

Sentences = list[tuple[int, int]]


def recording(
    minutes: float, snr_db: float | None, seed: int = 0
) -> tuple[npt.NDArray[np.int16], Sentences]:
    """The audio and where each sentence lies in it."""
    rng = np.random.default_rng(seed)
    spoken = (sentence(1), sentence(2))
    parts: list[npt.NDArray[np.float64]] = [np.zeros(RATE)]
    truth: Sentences = []
    position = RATE
    while position < minutes * 60 * RATE:
        voice = spoken[int(rng.integers(2))]
        parts.append(voice)
        truth.append((position, position + len(voice)))
        gap = np.zeros(round(rng.uniform(0.3, 1.5) * RATE))
        parts.append(gap)
        position += len(voice) + len(gap)
    signal = np.concatenate(parts)
    speech = np.concatenate([signal[start:end] for start, end in truth])
    signal *= 10 ** (-20 / 20) / rms(speech)
    if snr_db is not None:
        signal += noise("pink", len(signal), seed) * 10 ** ((-20 - snr_db) / 20)
    return np.clip(np.round(signal * 32768), -32768, 32767).astype(np.int16), truth


def inside(edges: list[int], truth: Sentences) -> int:
    """How many of `edges` fall inside a sentence, more than MARGIN from its ends."""
    starts = np.array([start for start, _ in truth])
    count = 0
    for edge in edges:
        index = int(np.searchsorted(starts, edge, side="right")) - 1
        if index >= 0 and truth[index][0] + MARGIN < edge < truth[index][1] - MARGIN:
            count += 1
    return count


def silero_cuts(events: list[VadEvent]) -> list[int]:
    """Speech runs grouped greedily up to the window (its padding left), cut mid-pause."""
    runs = list(zip(events[::2], events[1::2], strict=True))
    budget = round((WINDOW_SECONDS - 2 * segmentation.PAD_SECONDS) * RATE)
    cuts, group_start = [], runs[0][0].sample
    for (_, stop), (start, end) in itertools.pairwise(runs):
        if end.sample - group_start > budget:
            cuts.append((stop.sample + start.sample) // 2)
            group_start = start.sample
    return cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--snr", default="20,10", help="dB, comma-separated; clean always runs")
    args = parser.parse_args()
    model = SpeechModel()
    print("SNR | sentences | energy: edges inside a sentence, CPU ms per audio s | Silero: same")
    for snr in [None, *(float(each) for each in args.snr.split(","))]:
        audio, truth = recording(args.minutes, snr)
        seconds = len(audio) / RATE
        began = time.process_time()
        spans = segmentation.split(audio, RATE, WINDOW_SECONDS)
        energy_cpu = time.process_time() - began
        edges = [span.start for span in spans[1:]] + [span.end for span in spans[:-1]]
        detector = SpeechDetector(model, max_speech_ms=round(WINDOW_SECONDS * 1000))
        began = time.process_time()
        events = [
            event
            for at in range(0, len(audio), RATE)
            for event in detector.feed(audio[at : at + RATE])
        ]
        events += detector.flush()
        silero_cpu = time.process_time() - began
        cuts = silero_cuts(events)
        print(
            f"{'clean' if snr is None else snr} | {len(truth)} | "
            f"{inside(edges, truth)} of {len(edges)}, {energy_cpu / seconds * 1000:.3f} | "
            f"{inside(cuts, truth)} of {len(cuts)}, {silero_cpu / seconds * 1000:.2f}"
        )


if __name__ == "__main__":
    main()
