"""The stages every transcription may go through, in the order they run."""

from __future__ import annotations

from collections.abc import Callable

from ..backend.aligner import Aligner
from ..settings.limits import LimitsSettings
from ..speakers.diarize import SpeakerFinder
from ..speech.silero import SpeechModel
from ..transcription.stage import Stage
from .speakers import SpeakerAttribution
from .words import WordAlignment


def every(
    settings: LimitsSettings,
    aligner: Aligner | None,
    speech: Callable[[], SpeechModel],
    diarizer: SpeakerFinder | None,
) -> tuple[Stage, ...]:
    """Word times first: speakers are then given to the words too."""
    return (
        WordAlignment(aligner, settings.segment_concurrency),
        SpeakerAttribution(diarizer, speech),
    )
