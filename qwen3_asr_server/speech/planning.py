"""Where a long upload is cut, for a fraction of what hearing all of it with Silero costs.

`segmentation.split` cuts where Silero VAD hears pauses, and Silero over a whole recording
costs about 2 ms of CPU per second of audio: a GPU that transcribes a few thousand seconds of
audio a second would need several cores for the cuts alone. But a plan needs Silero's word
only where it cuts. So frame energy (hundredths of a millisecond per second) proposes the
quiet stretches, and Silero hears only those the plan would cut at or leave out (each with
half a second before it, to settle): one Silero hears speech in is no pause, one it confirms
takes the edges Silero heard, and the plan is made again, until every cut and every stretch
left out is a pause Silero heard. The plan is made by `segmentation`'s own rules (pieces up
to the window, the longest pause in its later half, a long pause always ends a piece,
padding), so every cut is at a pause Silero heard; `scripts/cut_quality.py` measures both.

Frame energy misses pauses in noise and proposes stretches inside words; neither costs a
wrong cut. A window where energy proposes nothing is heard whole in its later half, and cut
at a pause Silero finds there, else where Silero is least sure, as `split` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .audio import RATE
from .segmentation import (
    MIN_SPEECH_SECONDS,
    Chunking,
    Frames,
    Limits,
    Span,
    groups,
    padded,
    speech_runs,
)
from .silero import WINDOW, SpeechModel
from .stoppable import Stop

BLOCK = round(30 * RATE / WINDOW)  # windows (30 s) whose levels set one noise floor
FLOOR_PERCENTILE = 10  # the level of a block's quiet windows: its noise
SPEECH_PERCENTILE = 90  # and of its loud ones: its speech
QUIET_SHARE = 0.25  # a window this far from the floor to the speech level is quiet at most
QUIET_DB = 3.0  # and one within this of the floor always is
MARGIN = round(0.25 * RATE / WINDOW)  # windows Silero hears on either side of a stretch
_MIN_POWER = 1e-12  # digital silence, as a power relative to full scale

Levels = npt.NDArray[np.float32]


def levels(samples: npt.NDArray[np.int16]) -> Levels:
    """Each Silero window's level in dBFS, the last one padded with silence. Measured a block
    at a time: a float copy of an hour's recording would be 230 MB."""
    count = -(-len(samples) // WINDOW)
    power = np.empty(count, dtype=np.float32)
    for first in range(0, count, BLOCK):
        part = samples[first * WINDOW : (first + BLOCK) * WINDOW].astype(np.float32)
        frames = np.zeros((-(-len(part) // WINDOW), WINDOW), dtype=np.float32)
        frames.reshape(-1)[: len(part)] = part
        power[first : first + len(frames)] = np.einsum("ij,ij->i", frames, frames)
    found: Levels = 10 * np.log10(power / np.float32(WINDOW * 32768.0**2) + np.float32(_MIN_POWER))
    return found


def quiet(level: Levels, min_windows: int) -> tuple[Frames, Frames]:
    """The stretches of at least `min_windows` windows near their block's noise floor, and
    those of any length at the recording's ends (a piece is trimmed to its speech), as start
    and end windows: sounds shorter than a click inside one do not end it."""
    still = np.zeros(len(level), dtype=bool)
    for start in range(0, len(level), BLOCK):
        block = level[start : start + BLOCK]
        floor, speech = np.percentile(block, [FLOOR_PERCENTILE, SPEECH_PERCENTILE])
        still[start : start + BLOCK] = block < floor + max(QUIET_DB, QUIET_SHARE * (speech - floor))
    starts, ends = _runs(still)
    click = round(MIN_SPEECH_SECONDS * RATE / WINDOW)
    bridged = (starts[1:] - ends[:-1]) >= click  # whether the sound between two is more
    starts = np.concatenate([starts[:1], starts[1:][bridged]])
    ends = np.concatenate([ends[:-1][bridged], ends[-1:]])
    kept = (ends - starts >= min_windows) | (starts == 0) | (ends == len(level))
    return starts[kept], ends[kept]


def _runs(mask: npt.NDArray[np.bool_]) -> tuple[Frames, Frames]:
    edges = np.diff(mask.astype(np.int8), prepend=0, append=0)
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


@dataclass(frozen=True)
class _Stretch:
    """A quiet stretch, in windows: as energy found it, or a pause Silero `heard` there."""

    start: int
    end: int
    heard: bool = False


@dataclass(frozen=True)
class _Pause:
    """Stretches that touch, as one pause of the plan."""

    start: int
    end: int
    members: tuple[_Stretch, ...]


class _Planner:
    def __init__(
        self,
        samples: npt.NDArray[np.int16],
        model: SpeechModel,
        chunking: Chunking,
        stop: Stop | None,
    ) -> None:
        self.samples = samples
        self.model = model
        self.stop = stop
        self.chunking = chunking
        self.windows = -(-len(samples) // WINDOW)
        self.min_pause = max(1, round(chunking.min_pause * RATE / WINDOW))
        starts, ends = quiet(levels(samples), self.min_pause)
        self.stretches = {_Stretch(int(a), int(b)) for a, b in zip(starts, ends, strict=True)}
        self.listened: dict[tuple[int, int], int] = {}  # windows heard whole: where to cut them
        self.heard = np.zeros(self.windows, dtype=bool)  # the windows Silero has judged

    def plan(self, limits: Limits, whole: bool) -> list[tuple[int, int]]:
        """The first and last speech window of each piece, once Silero heard every pause
        the pieces end at or leave out; `whole`: one piece, from the first speech to the last."""
        while True:
            known = len(self.listened)
            pauses = self._pauses()
            starts, ends = self._speech(pauses)
            if not len(starts):
                found = []
            elif whole:
                found = [(int(starts[0]), int(ends[-1]))]
            else:
                every = self.chunking.every_pause
                found = groups(starts, ends, self._quietest, limits.budget, every)
            edges = {edge for first, last in found for edge in (first, last)}
            unheard = [
                member
                for pause in pauses
                if not found or pause.end in edges or pause.start in edges
                for member in pause.members
                if not member.heard
            ]
            if not unheard and len(self.listened) == known:
                return found
            self._listen(unheard)

    def _pauses(self) -> list[_Pause]:
        """The stretches, those that touch joined; those still shorter than the shortest
        pause are none, but at the recording's ends."""
        pauses: list[_Pause] = []
        for stretch in sorted(self.stretches, key=lambda each: (each.start, each.end)):
            if pauses and stretch.start <= pauses[-1].end:
                last = pauses.pop()
                end = max(last.end, stretch.end)
                pauses.append(_Pause(last.start, end, (*last.members, stretch)))
            else:
                pauses.append(_Pause(stretch.start, stretch.end, (stretch,)))
        return [
            pause
            for pause in pauses
            if pause.end - pause.start >= self.min_pause
            or pause.start == 0
            or pause.end == self.windows
        ]

    def _speech(self, pauses: list[_Pause]) -> tuple[Frames, Frames]:
        """The runs of speech between the pauses."""
        runs, at = [], 0
        for pause in pauses:
            if pause.start > at:
                runs.append((at, pause.start))
            at = max(at, pause.end)
        if at < self.windows:
            runs.append((at, self.windows))
        found = np.array(runs, dtype=np.int64).reshape(-1, 2)
        return found[:, 0], found[:, 1]

    def _listen(self, stretches: list[_Stretch]) -> None:
        """Each stretch replaced by the pauses Silero hears there: those of at least the
        shortest pause, and whatever silence reaches the edge of what was heard (it may go on
        beyond, where it is heard next).

        Where Silero hears no speech up to the edge of what it heard, the sound energy found
        beyond is no speech it could vouch for (a door, a gust of noise): it is heard next, up
        to the next stretch or what was heard before. No window is heard from there twice, and
        energy's stretches are heard once each: the plan is done in a bounded number of rounds.
        """
        regions = [
            (max(0, each.start - MARGIN), min(self.windows, each.end + MARGIN))
            for each in stretches
        ]
        unsure: list[tuple[int, int]] = []  # edges of heard silence, (window, +1 or -1)
        for stretch, (low, high), probabilities in zip(
            stretches, regions, self.model.regions(self.samples, regions, self.stop), strict=True
        ):
            self.stretches.discard(stretch)
            self.heard[low:high] = True
            starts, ends = speech_runs(probabilities, self.chunking)
            lows, highs = np.concatenate([[0], ends]) + low, np.concatenate([starts, [high - low]])
            for first, last in zip(lows.tolist(), (highs + low).tolist(), strict=True):
                edge = first == low or last == high
                if last - first >= self.min_pause or (edge and last > first):
                    self.stretches.add(_Stretch(first, last, heard=True))
                    unsure += [(first, -1)] if first == low > 0 else []
                    unsure += [(last, +1)] if last == high < self.windows else []
        for at, side in unsure:
            self._beyond(at, side)

    def _beyond(self, at: int, side: int) -> None:
        """The sound not yet heard from window `at` to the next stretch after it (`side` +1)
        or before it (-1), as a stretch to hear."""
        if side > 0:
            end = min([self.windows, *(each.start for each in self.stretches if each.start >= at)])
            stretch = _Stretch(at, at + _unheard_length(self.heard[at:end]))
        else:
            start = max([0, *(each.end for each in self.stretches if each.end <= at)])
            stretch = _Stretch(at - _unheard_length(self.heard[start:at][::-1]), at)
        if stretch.end > stretch.start:
            self.stretches.add(stretch)

    def _quietest(self, low: int, high: int) -> int:
        """Where continuous speech from window `low` to `high` is cut: Silero hears it whole,
        and the pauses it finds there join the plan; where it is least sure, if it finds none."""
        if (low, high) not in self.listened:
            (probabilities,) = self.model.regions(self.samples, [(low, high + 1)], self.stop)
            self.heard[low : high + 1] = True
            self.listened[(low, high)] = low + int(np.argmin(probabilities))
            starts, ends = speech_runs(probabilities, self.chunking)
            for gap in np.flatnonzero(starts[1:] - ends[:-1] >= self.min_pause):
                self.stretches.add(_Stretch(low + int(ends[gap]), low + int(starts[gap + 1]), True))
        return self.listened[(low, high)]


def _unheard_length(heard: npt.NDArray[np.bool_]) -> int:
    """How many windows from the start of `heard` were not heard."""
    found = np.flatnonzero(heard)
    return int(found[0]) if len(found) else len(heard)


def split(
    samples: npt.NDArray[np.int16],
    model: SpeechModel,
    max_seconds: float = 30.0,
    chunking: Chunking | None = None,
    stop: Stop | None = None,
) -> list[Span]:
    """`segmentation.split` of a 16 kHz recording, with Silero heard only where it cuts;
    `stop` is asked as Silero hears."""
    chunking = chunking or Chunking()
    limits = Limits.of(max_seconds, chunking)
    if not len(samples):
        return []
    planner = _Planner(samples, model, chunking, stop)
    whole = len(samples) <= limits.length and not chunking.every_pause
    found = planner.plan(limits, whole)
    cores = [(first * WINDOW, min(len(samples), last * WINDOW)) for first, last in found]
    return padded(cores, len(samples), limits)
