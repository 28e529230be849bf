"""An utterance transcribed before its turn has ended: turns that end sooner.

With server VAD a turn ends once `silence_duration_ms` of quiet have followed the speech, and
only then would its audio go to the model. At the first pause of PAUSE_MS inside an utterance
(`turns`), the audio so far is transcribed in the background instead, its events held back.
If the turn then ends where that pause began, the speculation is the utterance's
transcription: its held events go out as soon as the turn is committed and the rest as the
model writes them, so the transcript comes the window's remainder sooner. If speech resumes
first, the speculation is dropped, its upstream request cancelled, and a later pause
speculates again.

A kept speculation's audio is exactly what the final commit sends, sample for sample: both
run from the utterance's start to its speech's end plus TAIL_SECONDS, which lies inside the
PAUSE_MS already heard (`turns` checks the span before handing a speculation on). Its
request is the one the worker would make: the worker keeps it only if the session's
configuration and the context from the transcripts before (`history`) are what they were
when it started, and drops it otherwise. So that they are, a speculation starts only while
the worker has nothing queued or being transcribed (earlier utterances would change the
context); a pause that finds the worker busy speculates once the worker is idle, if the
pause still lasts then. A diarizing session does not speculate: its speakers are learned
utterance by utterance.

A speculation's transcript is counted (`transcribing`) only once it is kept, so every
utterance is counted once; `qwen3_asr_realtime_speculations_total{outcome}` counts those
started, kept and dropped (dropped: audio the model heard for nothing).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .protocol import SessionConfig
from .server_events import Event, Send

PAUSE_MS = 200  # of quiet inside an utterance before its audio so far is transcribed


@dataclass(frozen=True)
class Basis:
    """What a transcription's request is made of besides its audio."""

    config: SessionConfig
    context: str | None


@dataclass(eq=False)
class Speculation:
    """One utterance's transcription, started at a pause, its events held until it is kept.

    `start` and `end` are the stream positions of its audio; `task` returns its transcript
    (None when it failed), and waits for `kept` before it finishes."""

    item_id: str
    start: int
    end: int
    basis: Basis
    send_through: Send
    task: asyncio.Task[str | None] | None = None
    kept: asyncio.Event = field(default_factory=asyncio.Event)
    _held: list[Event] | None = field(default_factory=list)

    async def send(self, event: Event) -> None:
        """Hold the event until the speculation is kept; from then on, send it."""
        if self._held is None:
            await self.send_through(event)
        else:
            self._held.append(event)

    async def keep(self) -> str | None:
        """It is the utterance's transcription: its held events out in order, then the rest
        as they come; its transcript."""
        assert self.task is not None  # set as it was made (`Transcriber.speculate`)
        while self._held:
            await self.send_through(self._held.pop(0))
        self._held = None  # no await since the list emptied: no event can overtake
        self.kept.set()
        return await self.task

    def drop(self) -> None:
        """Cancel it, with its upstream request."""
        if self.task is not None:
            self.task.cancel()
