"""What a stage is: one step over a finished transcript, which a request asks for or not."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..audio import Audio
from ..protocol.form import AudioRequest
from ..transcription.pieces import Cuts
from ..transcription.transcript import Transcript


class Stage(Protocol):
    """One step after transcription.

    `needed` is asked before any work: whether this request wants the stage, or a 400 when it
    asks for what the stage cannot give (no backend for it, a language it does not know).
    `check_ready` is a 503 while what it needs is loading. `max_seconds` bounds the pieces the
    recording is cut into, if the stage takes each piece in one pass; `cuts` says where else
    they must be cut (between speakers), labelling each; `provides` names the fields of the
    `Transcript` it fills, so that a format can tell whether it will get them.
    """

    @property
    def provides(self) -> frozenset[str]: ...

    @property
    def max_seconds(self) -> float | None: ...

    def needed(self, request: AudioRequest) -> bool: ...

    def check_ready(self) -> None: ...

    def cuts(self, request: AudioRequest) -> Cuts | None: ...

    async def run(self, transcript: Transcript, audio: Audio) -> Transcript: ...


def needed(stages: Sequence[Stage], request: AudioRequest) -> list[Stage]:
    """The stages this request needs, in their order; a 400 for one it cannot have."""
    return [stage for stage in stages if stage.needed(request)]


async def run(stages: Sequence[Stage], transcript: Transcript, audio: Audio) -> Transcript:
    """The transcript after each stage in turn."""
    for stage in stages:
        transcript = await stage.run(transcript, audio)
    return transcript
