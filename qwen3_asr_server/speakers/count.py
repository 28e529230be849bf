"""How many people spoke, when the client knows (`min_speakers` / `max_speakers`): the
diarizer then finds that many voices, or a number in that range, instead of deciding alone.
Kept apart from the clustering so that a request can carry it without numpy."""

from __future__ import annotations

from dataclasses import dataclass

MOST_SPEAKERS = 20  # the largest count a client may give: pyannote's and WhisperX's use


@dataclass(frozen=True)
class SpeakerCount:
    """At least `least` and at most `most` speakers (1 <= least <= most <= MOST_SPEAKERS,
    as the front doors check); equal, the number exactly."""

    least: int = 1
    most: int = MOST_SPEAKERS

    @property
    def exact(self) -> bool:
        return self.least == self.most
