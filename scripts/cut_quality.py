#!/usr/bin/env python3
"""Where long recordings are cut, in noise, and what finding the pauses costs.

Builds `--minutes` of the tests' two espeak-ng sentences (`tests/fixtures/speech.py`) in
random order with pauses of 0.3-1.5 s, speech at -20 dBFS, clean and in pink (or
`--noise white`) noise at each `--snr`; plans its pieces as an upload is planned
(`transcription.pieces.plan`: `planning.split`, frame energy with Silero heard where it cuts)
and, side by side, with Silero over the whole recording (`segmentation.split`, the plan before
`planning`); counts the piece edges that fall inside a sentence (by more than 50 ms), the edges
of one plan more than 50 ms from every edge of the other, and the CPU per second of audio.
`--stream` also times Silero run as one stream, window by window (as before batching).

    .cache/test-venv/bin/python scripts/cut_quality.py --minutes 10 --snr 20,10
    .cache/test-venv/bin/python scripts/cut_quality.py --minutes 60 --snr 10 --stream

The frame-energy plan Silero replaced is measured by this script as of commit 5a34e20.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.speech import segmentation  # noqa: E402
from qwen3_asr_server.speech.audio import Audio  # noqa: E402
from qwen3_asr_server.speech.segmentation import Span  # noqa: E402
from qwen3_asr_server.speech.silero import SpeechModel  # noqa: E402
from qwen3_asr_server.speech.vad import SpeechDetector  # noqa: E402
from qwen3_asr_server.transcription.pieces import Options, plan  # noqa: E402
from tests.fixtures.speech import sentences_in_noise  # noqa: E402

RATE = 16_000
WINDOW_SECONDS = 30.0
MARGIN = round(0.05 * RATE)

Sentences = list[tuple[int, int]]


def inside(edges: list[int], truth: Sentences) -> int:
    """How many of `edges` fall inside a sentence, more than MARGIN from its ends."""
    starts = np.array([start for start, _ in truth])
    count = 0
    for edge in edges:
        index = int(np.searchsorted(starts, edge, side="right")) - 1
        if index >= 0 and truth[index][0] + MARGIN < edge < truth[index][1] - MARGIN:
            count += 1
    return count


def apart(edges: list[int], others: list[int]) -> int:
    """How many of `edges` lie more than MARGIN from every one of `others`."""
    return sum(all(abs(edge - other) > MARGIN for other in others) for edge in edges)


def timed(
    planner: Callable[[npt.NDArray[np.int16]], list[Span]], audio: npt.NDArray[np.int16]
) -> tuple[list[int], float]:
    """The inner piece edges a planner gives, and the CPU seconds it took."""
    began = time.process_time()
    spans = planner(audio)
    cpu = time.process_time() - began
    return [span.start for span in spans[1:]] + [span.end for span in spans[:-1]], cpu


def stream_cpu(model: SpeechModel, audio: npt.NDArray[np.int16]) -> float:
    """CPU seconds Silero takes over `audio` as one stream, a second at a time."""
    detector = SpeechDetector(model)
    began = time.process_time()
    for at in range(0, len(audio), RATE):
        detector.feed(audio[at : at + RATE])
    return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--snr", default="20,10", help="dB, comma-separated; clean always runs")
    parser.add_argument("--noise", choices=("pink", "white"), default="pink")
    parser.add_argument("--stream", action="store_true", help="time Silero as one stream too")
    args = parser.parse_args()
    model = SpeechModel()
    options = Options(
        language=None, context=None, temperature=0.0, timed=False, logprobs=False,
        window=WINDOW_SECONDS, concurrency=1,
    )  # fmt: skip
    print("SNR | sentences | pieces | edges inside a sentence | CPU ms per audio s", end="")
    print(" | whole-Silero plan: inside, CPU ms | edges not in the other plan", end="")
    print(" | as one stream" if args.stream else "")
    for snr in [None, *(float(each) for each in args.snr.split(","))]:
        audio, truth = sentences_in_noise(args.minutes, snr, args.noise)
        seconds = len(audio) / RATE
        edges, cpu = timed(lambda samples: plan(Audio(samples), options, lambda: model), audio)
        before, cpu_before = timed(
            lambda samples: segmentation.split(
                model.recording(samples), len(samples), WINDOW_SECONDS
            ),
            audio,
        )
        row = (
            f"{'clean' if snr is None else snr} | {len(truth)} | {len(edges) // 2 + 1} | "
            f"{inside(edges, truth)} of {len(edges)} | {cpu / seconds * 1000:.2f} | "
            f"{inside(before, truth)} of {len(before)}, {cpu_before / seconds * 1000:.2f} | "
            f"{apart(edges, before)} / {apart(before, edges)}"
        )
        if args.stream:
            row += f" | {stream_cpu(model, audio) / seconds * 1000:.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
