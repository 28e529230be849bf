"""Where a Wyoming command ends when the satellite does not say so (server-side endpointing).

A satellite that streams `audio-chunk`s without an `audio-stop` leaves the end of the command
to the server (`requires_external_vad: false`). The command's audio is heard as it arrives by
the Realtime API's detector (`speech.vad.SpeechDetector`, Silero VAD, threshold 0.5), fed
incrementally, so each chunk costs only its own windows. The command ends at the first pause
after speech: `silence_ms` below the threshold, as the client's `vad_sensitivity` asks
(Home Assistant's own silences, so a command ends alike whichever side listens). Silence
before speech does not end it; two bounds do:

- no speech begun in the first QUIET_SECONDS (a wake word heard by mistake): it ends there;
- speech that never pauses is cut MAX_SPEECH_SECONDS after it began (a television).

Memory is the detector's (constant); the network is the process's one `SpeechModel`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from wyoming.asr import VadSensitivity

from ...speech.audio import RATE
from ...speech.silero import SpeechModel
from ...speech.vad import SpeechDetector, SpeechStopped

# Home Assistant's silences for its pipeline's VAD (assist_pipeline's VadSensitivity)
SILENCE_MS = {
    VadSensitivity.DEFAULT: 700,
    VadSensitivity.RELAXED: 1250,
    VadSensitivity.AGGRESSIVE: 250,
}
# Long enough to start speaking after the wake word, short enough that a wake word heard by
# mistake does not keep the satellite listening.
QUIET_SECONDS = 8.0
# A voice command is a few seconds; speech heard longer without a pause is rather a
# television or a radio. Home Assistant's own VAD gives a command 15 s as well.
MAX_SPEECH_SECONDS = 15.0


def silence_ms(sensitivity: str | None) -> int:
    """The pause that ends a command, for a `transcribe`'s `vad_sensitivity` (`default`,
    `relaxed`, `aggressive`); none or one this server does not know: the default."""
    try:
        return SILENCE_MS[VadSensitivity(sensitivity)]
    except ValueError:
        return SILENCE_MS[VadSensitivity.DEFAULT]


class Endpoint:
    """Listens to one command's 16 kHz audio, from its first sample, for its end."""

    def __init__(self, model: Callable[[], SpeechModel], sensitivity: str | None) -> None:
        self._model = model
        self._silence_ms = silence_ms(sensitivity)
        self._detector: SpeechDetector | None = None
        self._heard = 0  # samples listened to
        self._spoke = False  # speech began (within QUIET_SECONDS)
        self.end: int | None = None  # the sample the command ends at, once heard

    async def hear(self, samples: npt.NDArray[np.int16]) -> bool:
        """Listen to the command's next samples; True once its end is heard (`end`), after
        which the command takes no more. Silero scores its windows in a thread, in a batch with
        those of the process's other streams (`speech.scoring`), as for Realtime appends."""
        if self._detector is None:
            model = await asyncio.to_thread(self._model)  # the first command loads it
            self._detector = SpeechDetector(
                model,
                silence_ms=self._silence_ms,
                prefix_ms=0,  # the command keeps all its audio; nothing to pad
                max_speech_ms=round(MAX_SPEECH_SECONDS * 1000),
            )
        quiet = round(QUIET_SECONDS * RATE)
        # Heard up to the quiet bound first, so that where it ends depends only on the audio,
        # never on how it was chunked.
        split = 0 if self._spoke else quiet - self._heard
        for piece in (samples[:split], samples[split:]):
            for change in await self._detector.hear(piece):
                if isinstance(change, SpeechStopped):
                    self.end = change.audio_end
                    return True
                self._spoke = True
            self._heard += len(piece)
            if not self._spoke and self._heard >= quiet:
                self.end = quiet
                return True
        return False
