"""What a stage is: one step over a finished transcript, which a request asks for or not.

Declared here, beside the service that runs the stages, so that the service needs nothing of
`stages/`, which holds the stages themselves and their order (`stages.registry`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..observability.tracing import OFF, Tracing
from ..speech.audio import Audio
from .pieces import Cuts
from .request import Request
from .transcript import Transcript


class Stage(Protocol):
    """One step of an upload's transcription that adds to what the model wrote.

    A stage fills fields of the `Transcript` that the model alone cannot (word times from the
    aligner, speakers from the diarizer), for the requests that ask for them: a
    `request.Request` given to `TranscriptionService`, by the audio endpoints (transcriptions
    and translations) or any other way in. Realtime sessions do not go through stages: a
    diarizing session's worker cuts each utterance with the diarizer itself, remembering the
    session's voices.

    When each part runs, for one request:
    - `needed`, when the request is accepted, once its fields are read: whether this request
      wants the stage, or a 400 when it asks for what the stage cannot give (no backend for
      it, a language it does not know);
    - `check_ready`, next, for the needed stages only: a 503 while what it needs is loading,
      before any audio is decoded;
    - `max_seconds` and `cuts`, when the request's options are set: the longest piece the
      recording may be cut into (if the stage takes each piece in one pass) and where else it
      must be cut, each piece labelled (between speakers; the first stage that cuts is the
      one heard); the cut itself is made once the audio is decoded (`pieces.plan`);
    - `run`, after every piece is transcribed, in the registry's order, each stage given the
      transcript the one before it returned. A streamed answer is sent as the pieces are
      transcribed, so it gets the cuts and their labels but no `run`.
    `provides` names the `Transcript` fields it fills, so that the service can tell whether
    a request will get them (subtitles cut at sentence ends when words come, else at the
    format's own lengths).

    To add one: a module in `stages/` with a class that has these members (no base class:
    this is a Protocol), and a line in `registry.every` at its place in the order, built from
    what `app.py` passes there.
    """

    @property
    def provides(self) -> frozenset[str]: ...

    @property
    def max_seconds(self) -> float | None: ...

    def needed(self, request: Request) -> bool: ...

    def check_ready(self) -> None: ...

    def cuts(self, request: Request) -> Cuts | None: ...

    async def run(self, transcript: Transcript, audio: Audio) -> Transcript: ...


def needed(stages: Sequence[Stage], request: Request) -> list[Stage]:
    """The stages this request needs, in their order; a 400 for one it cannot have."""
    return [stage for stage in stages if stage.needed(request)]


async def run(
    stages: Sequence[Stage], transcript: Transcript, audio: Audio, tracing: Tracing = OFF
) -> Transcript:
    """The transcript after each stage in turn, each a span of the trace."""
    for stage in stages:
        with tracing.span(f"stage: {', '.join(sorted(stage.provides))}"):
            transcript = await stage.run(transcript, audio)
    return transcript
