"""Who said what: the speaker stage, for the diarizing model (`gpt-4o-transcribe-diarize`).

It works before transcription as well as after: the diarizer finds the regions of one speaker
each (`speakers.diarize`), and the recording's pieces are cut inside them (`cuts`), so every
segment is one speaker's, labelled as its region is; after transcription, aligned words take
their segment's speaker. Known speakers' references are embedded with the recording, in the
planning thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..speakers.diarize import Known, SpeakerFinder
from ..speech.audio import Audio
from ..speech.segmentation import Span
from ..speech.silero import Probabilities, SpeechModel
from ..transcription.pieces import Cuts
from ..transcription.request import Request
from ..transcription.transcript import Transcript


class SpeakerAttribution:
    provides = frozenset({"speakers"})
    max_seconds = None

    def __init__(self, diarizer: SpeakerFinder | None, speech: Callable[[], SpeechModel]) -> None:
        self.diarizer = diarizer  # None: --diarizer none, and the catalog refuses the model
        self.speech = speech

    def needed(self, request: Request) -> bool:
        """Not with multichannel: its channels are its speakers."""
        return request.diarize and not request.multichannel and self.diarizer is not None

    def check_ready(self) -> None:
        """The diarizer runs in this process: always ready."""

    def cuts(self, request: Request) -> Cuts | None:
        diarizer, speech, references = self.diarizer, self.speech, request.known
        count = request.speakers
        assert diarizer is not None  # `needed` said so

        def regions(audio: Audio, probabilities: Probabilities) -> list[Span]:
            known = [
                Known(
                    each.name,
                    diarizer.voice(each.voice.samples, speech().recording(each.voice.samples)),
                )
                for each in references
            ]
            return diarizer.regions(audio.samples, probabilities, known, count)

        return regions

    async def run(self, transcript: Transcript, audio: Audio) -> Transcript:
        segments = [
            dataclasses.replace(
                segment,
                words=[
                    dataclasses.replace(word, speaker=segment.speaker) for word in segment.words
                ],
            )
            if segment.words
            else segment
            for segment in transcript.segments
        ]
        words = [word for segment in segments for word in segment.words or ()]
        return dataclasses.replace(
            transcript, segments=segments, words=words if transcript.words is not None else None
        )
