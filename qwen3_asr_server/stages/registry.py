"""The stages every transcription may go through, in the order they run."""

from __future__ import annotations

from ..backend.aligner import Aligner
from ..settings import Settings
from .stage import Stage
from .words import WordAlignment


def every(settings: Settings, aligner: Aligner | None) -> tuple[Stage, ...]:
    """Word times first: a later stage (speakers) may use them."""
    return (WordAlignment(aligner, settings.segment_concurrency),)
