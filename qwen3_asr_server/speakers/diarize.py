"""Who speaks when in a recording: windows of its speech embedded by CAM++, clustered, and the
recording cut into regions of one speaker each, for the transcription to cut its pieces in.

Each run of speech (as Silero VAD hears it) is covered by 1.5 s windows every 0.75 s; a
window speaks for the time nearer its centre than its neighbours', so a change of speaker is
placed within ~0.4 s even without a pause. A run too short for a window (a "yes") goes to the
nearest speaker. Overlapped speech belongs to whichever voice its windows sound most like:
one speaker per moment, as in OpenAI's `diarized_json`.

The features of a window are computed when it is embedded, a batch at a time, so memory holds
the embeddings (768 bytes a window, ~3.7 MB for an hour of speech) and the affinity of the
windows (4 bytes per pair), not the audio's features.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
from scipy.optimize import linear_sum_assignment

from ..speech import segmentation
from ..speech.audio import RATE
from ..speech.segmentation import Span
from ..speech.silero import WINDOW as VAD_WINDOW
from ..speech.silero import Probabilities
from . import clustering, features
from .count import SpeakerCount
from .embedding import BATCH, Embeddings, SpeakerModel, unit

WINDOW = round(1.5 * RATE)  # samples a window embeds
HOP = round(0.75 * RATE)  # samples between windows
SHORTEST = round(0.5 * RATE)  # runs of speech shorter than this get no window of their own
NAME_COSINE = 0.5  # a speaker is a known one when its voice is at least this alike
# A Realtime utterance's voice is one the session heard when their means are as alike as two
# clusters that are merged (clustering.MERGE_COSINE), or this alike when it said too little for
# a whole window: a print of under 1.5 s is ~0.65 alike to its own voice and ~0.5 to others
# (flite's voices), too unsure to open a new voice on
UNSURE_COSINE = 0.45


@dataclass(frozen=True)
class Known:
    """A speaker the client named (`known_speaker_names[]`) and their voice's embedding."""

    name: str
    embedding: npt.NDArray[np.float32]


def windows(speech: Sequence[Span]) -> list[Span]:
    """The windows that cover each run of speech, in order: every HOP, the last one ending
    with the run; a run shorter than WINDOW is one window, one shorter than SHORTEST none."""
    found = []
    for run in speech:
        length = run.end - run.start
        if length < SHORTEST:
            continue
        if length <= WINDOW:
            found.append(Span(run.start, run.end))
            continue
        starts = list(range(run.start, run.end - WINDOW + 1, HOP))
        if starts[-1] + WINDOW < run.end:
            starts.append(run.end - WINDOW)
        found += [Span(start, start + WINDOW) for start in starts]
    return found


def whole(spans: Sequence[Span]) -> npt.NDArray[np.bool_]:
    """Which spans are whole windows (the others: runs of speech shorter than one)."""
    return np.array([span.end - span.start >= WINDOW for span in spans], dtype=bool)


def embed(samples: npt.NDArray[np.int16], spans: Sequence[Span], model: SpeakerModel) -> Embeddings:
    """The embedding of each span of the recording, BATCH spans' features at a time."""
    found = np.empty((len(spans), model.dimension), dtype=np.float32)
    for first in range(0, len(spans), BATCH):
        batch = spans[first : first + BATCH]
        found[first : first + len(batch)] = model.embed(
            [features.fbank(samples[span.start : span.end]) for span in batch]
        )
    return found


def turns(speech: Sequence[Span], spans: Sequence[Span], labels: Sequence[str]) -> list[Span]:
    """The runs of speech cut where the label of the nearest window changes, each labelled
    as its windows are; runs without a window take the nearest window's label."""
    centres = np.array([(span.start + span.end) // 2 for span in spans])
    found: list[Span] = []
    for run in speech:
        inside = np.flatnonzero((centres >= run.start) & (centres < run.end))
        if len(inside) == 0:
            middle = (run.start + run.end) // 2
            nearest = int(np.argmin(np.abs(centres - middle)))
            found.append(Span(run.start, run.end, labels[nearest]))
            continue
        start = run.start
        for at, following in itertools.pairwise(inside.tolist()):
            if labels[at] != labels[following]:
                end = int(centres[at] + centres[following]) // 2
                found.append(Span(start, end, labels[at]))
                start = end
        found.append(Span(start, run.end, labels[int(inside[-1])]))
    return found


def regions(found: Sequence[Span], length: int) -> list[Span]:
    """The recording of `length` samples cut into regions of one speaker each, consecutive
    turns of one speaker merged: each region reaches halfway into the silence on either side,
    its ends on VAD windows (so each has its own speech probabilities)."""
    merged: list[Span] = []
    for turn in found:
        if merged and merged[-1].speaker == turn.speaker:
            merged[-1] = Span(merged[-1].start, turn.end, turn.speaker)
        else:
            merged.append(turn)
    bounds = [0]
    for previous, following in itertools.pairwise(merged):
        middle = (previous.end + following.start) // 2
        bounds.append(max(bounds[-1], round(middle / VAD_WINDOW) * VAD_WINDOW))
    bounds.append(length)
    return [
        Span(start, end, turn.speaker)
        for start, end, turn in zip(bounds[:-1], bounds[1:], merged, strict=True)
        if end > start
    ]


def labels(means: Embeddings, known: Sequence[Known]) -> list[str]:
    """Each cluster's label, in order of first speech: the name of the known speaker it
    sounds like (each name used once, the best matches first), else A, B, ... in order."""
    names: dict[int, str] = {}
    if known:
        similarity = means @ np.stack([each.embedding for each in known]).T
        # a pair too unlike to be named weighs nothing: it must not pull the others apart
        similarity = np.where(similarity >= NAME_COSINE, similarity, 0.0)
        for row, column in zip(*linear_sum_assignment(-similarity), strict=True):
            if similarity[row, column] >= NAME_COSINE:
                names[int(row)] = known[column].name
    unnamed = iter(range(len(means)))
    return [
        names[index] if index in names else letter(next(unnamed)) for index in range(len(means))
    ]


def letter(index: int) -> str:
    """The label of the speaker first heard `index`-th among the unnamed: A, B, ..., Z, S27."""
    return string.ascii_uppercase[index] if index < 26 else f"S{index + 1}"


class Voices:
    """The speakers a Realtime session has heard, A, B, ... in order of first speech: each
    the mean of its voice prints so far, which each new utterance's voices are matched to.
    Once `most` voices are open (the session's `max_speakers`), an unheard voice goes to the
    nearest of them."""

    def __init__(self, most: int | None = None) -> None:
        self._sums: list[npt.NDArray[np.float32]] = []
        self.last = letter(0)  # who spoke last: for an utterance too short to tell by
        self.most = most

    def label(self, embeddings: Embeddings, sure: bool = True) -> str:
        """The label of the voice of these windows (one speaker's), a new one if unheard;
        not `sure`: they are shorter than a window, and any voice alike enough will do."""
        total = embeddings.sum(axis=0)
        if self._sums:
            similarity = unit(np.stack(self._sums)) @ unit(total)
            best = int(np.argmax(similarity))
            full = self.most is not None and len(self._sums) >= self.most
            if full or similarity[best] >= (clustering.MERGE_COSINE if sure else UNSURE_COSINE):
                self._sums[best] = self._sums[best] + total
                self.last = letter(best)
                return self.last
        self._sums.append(total)
        self.last = letter(len(self._sums) - 1)
        return self.last


class SpeakerFinder(Protocol):
    """What a diarizer does: the default one (`Diarizer`) and pyannote's (`speakers.pyannote`)."""

    def regions(
        self,
        samples: npt.NDArray[np.int16],
        probabilities: Probabilities,
        known: Sequence[Known] = (),
        count: SpeakerCount | None = None,
    ) -> list[Span]: ...

    def utterance(
        self, samples: npt.NDArray[np.int16], probabilities: Probabilities, voices: Voices
    ) -> list[Span]: ...

    def voice(
        self, samples: npt.NDArray[np.int16], probabilities: Probabilities
    ) -> npt.NDArray[np.float32]: ...


class Diarizer:
    """The default diarizer: one per process, its network shared by every request."""

    def __init__(self, model: Callable[[], SpeakerModel]) -> None:
        self._model = model

    def regions(
        self,
        samples: npt.NDArray[np.int16],
        probabilities: Probabilities,
        known: Sequence[Known] = (),
        count: SpeakerCount | None = None,
    ) -> list[Span]:
        """The recording's regions of one speaker each, labelled; none without speech; as
        many speakers as `count` allows."""
        speech = segmentation.speech(probabilities, len(samples))
        spans = windows(speech)
        if not spans:  # only words too short to tell a voice by: one speaker
            return [Span(0, len(samples), letter(0))] if speech else []
        embeddings = embed(samples, spans, self._model())
        found = clustering.cluster(embeddings, count=count)
        names = labels(clustering.centroids(embeddings, found), known)
        return regions(turns(speech, spans, [names[label] for label in found]), len(samples))

    def utterance(
        self, samples: npt.NDArray[np.int16], probabilities: Probabilities, voices: Voices
    ) -> list[Span]:
        """A Realtime utterance's regions, labelled as the session's speakers (`voices`)."""
        speech = segmentation.speech(probabilities, len(samples))
        spans = windows(speech)
        if not spans and speech:  # too short for a window of its own: one of all its speech
            spans = [Span(speech[0].start, speech[-1].end)]
        if not spans:
            return [Span(0, len(samples), voices.last)]
        embeddings = embed(samples, spans, self._model())
        sure = whole(spans)
        found = clustering.cluster(embeddings)
        names = [
            voices.label(embeddings[found == label], bool(sure[found == label].any()))
            for label in range(found.max() + 1)
        ]
        return regions(turns(speech, spans, [names[label] for label in found]), len(samples))

    def voice(
        self, samples: npt.NDArray[np.int16], probabilities: Probabilities
    ) -> npt.NDArray[np.float32]:
        """The embedding of a known speaker's reference clip: the mean of its windows'."""
        speech = segmentation.speech(probabilities, len(samples)) or [Span(0, len(samples))]
        spans = windows(speech) or [Span(0, len(samples))]
        return unit(embed(samples, spans, self._model()).mean(axis=0))
