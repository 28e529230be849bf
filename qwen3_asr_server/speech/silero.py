"""Silero VAD: the probability that each 32 ms window of 16 kHz audio holds speech.

One neural network serves every place the server looks for pauses: Realtime turn detection
and the end of a Wyoming command (`speech.vad`, window by window as the audio arrives) and
the cuts in long uploads (`segmentation`, a whole recording at once). Frame energy against a
level, which turns and cuts used before, heard noise at 20 dB SNR as endless speech and put a
quarter of its cuts inside sentences there; Silero finds the pauses clean and in noise down to
5 dB SNR (see docs/features/audio.md).

A whole recording is judged as many streams side by side: it is cut into chunks that run as
one batch through the network, each chunk primed with the second of audio before it. ONNX
Runtime spends about half as much CPU per window in a batch of 64 as one window at a time,
and the probabilities differ from one long stream's only where the network is in two minds
anyway (near the threshold, around 1% of windows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from . import onnx_models
from .audio import RATE
from .scoring import Batches, scored
from .scoring import Probabilities as Probabilities  # Silero's, named where batches are
from .scoring import State as State
from .stoppable import Stop

WINDOW = 512  # samples Silero judges at a time at 16 kHz: 32 ms
CONTEXT = 64  # samples of the window before that the model sees with each window
NEGATIVE_MARGIN = 0.15  # speech goes on until the probability falls this far below threshold
MAX_BATCH = 64  # streams judged side by side; more gains little (~67 against ~72 us a window)
MIN_CHUNK = 256  # windows (8 s) per stream at least, so that priming stays a small cost
PRIMING = 32  # windows (1 s) each stream hears before its chunk, their answers dropped
REGION_PRIMING = 16  # windows (0.5 s) a region hears before itself
FULL_SCALE = 32768.0


class SpeechModel:
    """Silero VAD v5 (ONNX, `weights/silero/`), one per process (`onnx_models.Shared`): every
    Realtime session and upload shares the network and keeps its own recurrent state. Live
    streams have their windows scored together (`score`, `scoring`)."""

    def __init__(self) -> None:
        self._session = onnx_models.session("silero/silero_vad.onnx")
        self._rate = np.array(RATE, dtype=np.int64)
        self._batches = Batches(self.step)

    @staticmethod
    def initial_state(streams: int = 1) -> State:
        return np.zeros((2, streams, 128), dtype=np.float32)

    def step(self, windows: npt.NDArray[np.float32], state: State) -> tuple[Probabilities, State]:
        """One window of each stream (rows: context + window, scaled to -1..1) and the
        streams' state; their speech probabilities and the state after."""
        output, state = self._session.run(
            None, {"input": windows, "state": state, "sr": self._rate}
        )
        return output[:, 0], state

    async def score(
        self, windows: npt.NDArray[np.float32], state: State
    ) -> tuple[list[float], State]:
        """`probabilities`, from the event loop: in a batch with the windows other streams
        of the process hand in meanwhile, run in a thread."""
        return await self._batches.score(windows, state)

    def probabilities(
        self, windows: npt.NDArray[np.float32], state: State
    ) -> tuple[list[float], State]:
        """Speech probability of each row of `windows` (context + window, in order) of one
        stream, and the state after the last: a batch of one stream (`scoring.scored`)."""
        return scored(self.step, [windows], [state])[0]

    def recording(self, samples: npt.NDArray[np.int16], stop: Stop | None = None) -> Probabilities:
        """The speech probability of every window of a whole 16 kHz recording, the last one
        padded with silence: `ceil(len(samples) / WINDOW)` values. `stop` is asked between
        steps: a request that is gone stops paying for its recording."""
        windows = -(-len(samples) // WINDOW)
        if not windows:
            return np.zeros(0, dtype=np.float32)
        streams = max(1, min(MAX_BATCH, windows // MIN_CHUNK))
        length = -(-windows // streams)
        priming = PRIMING if streams > 1 else 0
        firsts = np.arange(streams) * length - priming
        found = self._streams(samples, firsts, priming + length, stop)
        return found[priming:].T.reshape(-1)[:windows]

    def regions(
        self,
        samples: npt.NDArray[np.int16],
        regions: Sequence[tuple[int, int]],
        stop: Stop | None = None,
    ) -> list[Probabilities]:
        """The speech probability of windows `start:end` of each region of a recording: what
        looking at a few places costs. Each region is judged in parts of at most MIN_CHUNK
        windows, each part a stream of its own primed with the REGION_PRIMING windows before
        it, the parts of about one length batched: a long region (loud noise that frame energy
        cannot tell from a pause) costs what the same stretch of `recording` does."""
        parts = [
            (start, min(end, start + MIN_CHUNK))
            for begin, end in regions
            for start in range(begin, end, MIN_CHUNK)
        ]
        order = sorted(range(len(parts)), key=lambda index: parts[index][1] - parts[index][0])
        heard: list[Probabilities] = [np.zeros(0, dtype=np.float32)] * len(parts)
        for batch in (order[at : at + MAX_BATCH] for at in range(0, len(order), MAX_BATCH)):
            starts = np.array([parts[index][0] for index in batch])
            steps = REGION_PRIMING + max(parts[index][1] - parts[index][0] for index in batch)
            found = self._streams(samples, starts - REGION_PRIMING, steps, stop)
            for column, index in enumerate(batch):
                start, end = parts[index]
                heard[index] = found[REGION_PRIMING : REGION_PRIMING + end - start, column]
        joined, at = [], 0
        for begin, end in regions:
            count = -(-(end - begin) // MIN_CHUNK)
            pieces = heard[at : at + count]
            joined.append(np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32))
            at += count
        return joined

    def _streams(
        self,
        samples: npt.NDArray[np.int16],
        firsts: npt.NDArray[np.int64],
        steps: int,
        stop: Stop | None,
    ) -> npt.NDArray[np.float32]:
        """`steps` windows of streams side by side, stream i from window `firsts[i]` on (silence
        outside the recording): their probabilities, one row per step. The rows are gathered
        step by step, so that the recording is never copied whole."""
        offsets = np.arange(-CONTEXT, WINDOW)
        state = self.initial_state(len(firsts))
        found = np.empty((steps, len(firsts)), dtype=np.float32)
        for step in range(steps):
            if stop is not None:
                stop.check()
            at = ((firsts + step) * WINDOW)[:, None] + offsets
            inside = (at >= 0) & (at < len(samples))
            batch = np.where(inside, samples[np.clip(at, 0, len(samples) - 1)], 0)
            found[step], state = self.step(batch.astype(np.float32) / np.float32(FULL_SCALE), state)
        return found
