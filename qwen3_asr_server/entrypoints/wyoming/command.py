"""One `transcribe` command: its language and model, then its audio, as 16 kHz mono samples.

Each chunk says its own format (rate, width, channels); it is converted as it arrives, with
the resampler the Realtime API uses (`speech.audio.Resampler`), one per format, so a command holds
only its 16 kHz samples, and listened to for the command's end (`endpoint`). What a client
may not send is a `Refusal`, which the handler answers with an `error` event.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk

from ...model.catalog import Catalog
from ...model.languages import SUPPORTED, Language, named
from ...speech.audio import MAX_RATE, MIN_RATE, Audio, Resampler, describe_seconds
from ...speech.silero import SpeechModel
from .endpoint import Endpoint


class Refusal(Exception):
    """What the client sent cannot be transcribed: `code` and `text` of the `error` event."""

    def __init__(self, code: str, text: str, outcome: str = "invalid") -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.outcome = outcome  # as the metrics count it


def language_of(asked: str | None) -> Language | None:
    """The language a `transcribe` names, as Qwen3-ASR's code or English name, or a locale
    (`en-US`, `pt_BR`) of one; None: the model detects it."""
    if not asked:
        return None
    found = named(asked) or named(asked.replace("_", "-").split("-")[0])
    if found is None:
        codes = ", ".join(language.code for language in SUPPORTED)
        raise Refusal(
            "unsupported-language", f"Unsupported language {asked!r}: Qwen3-ASR knows {codes}."
        )
    return found


class Command:
    """A command being received. `transcribe` is optional: audio without it is transcribed
    with the language detected, as wyoming-faster-whisper does (Home Assistant always sends
    it first)."""

    def __init__(
        self,
        catalog: Catalog,
        speech: Callable[[], SpeechModel],
        transcribe: Transcribe | None = None,
        endpointing: bool = True,
        *,
        max_seconds: float,
    ) -> None:
        self.language: Language | None = None
        if transcribe is not None:
            self.language = language_of(transcribe.language)
            refusal = catalog.refusal(transcribe.name) if transcribe.name else None
            if refusal is not None:
                raise Refusal("model-not-found", refusal.message)
        self._resampler: Resampler | None = None
        self._format = (0, 0, 0)  # the chunks' rate, width and channels the resampler takes
        self._parts: list[npt.NDArray[np.int16]] = []
        self._seconds = 0.0  # of audio received
        self._max_seconds = max_seconds
        self._endpoint = (
            Endpoint(speech, transcribe.vad_sensitivity if transcribe else None)
            if endpointing
            else None  # --no-wyoming-endpointing: it ends at audio-stop
        )

    async def hear(self, chunk: AudioChunk) -> bool:
        """`add` a chunk and listen to it: True once the command's end is heard (its audio
        ends there, and what comes after it is not the command's)."""
        samples = self.add(chunk)
        return self._endpoint is not None and await self._endpoint.hear(samples)

    def add(self, chunk: AudioChunk) -> npt.NDArray[np.int16]:
        """A chunk's audio, converted and kept (returned too); a Refusal for a format or a
        length it cannot have."""
        width, channels = chunk.width, chunk.channels
        if (
            width not in Resampler.FORMATS
            or not 1 <= channels <= 8
            or not MIN_RATE <= chunk.rate <= MAX_RATE
        ):
            raise Refusal(
                "unsupported-audio",
                f"Audio of {chunk.rate} Hz, {width} bytes a sample, {channels} channels cannot "
                "be read: send 8-, 16- or 32-bit PCM, 1 to 8 channels, at 1 kHz to 3 MHz.",
            )
        if len(chunk.audio) % (width * channels):
            raise Refusal(
                "bad-audio",
                f"An audio chunk of {len(chunk.audio)} bytes is not whole samples of "
                f"{width} bytes times {channels} channels.",
            )
        # counted as sent, before resampling: 4 MiB of 1 kHz audio would be 128 MB at 16 kHz
        self._seconds += len(chunk.audio) / (width * channels * chunk.rate)
        if self._seconds > self._max_seconds:
            raise Refusal(
                "audio-too-long",
                f"A command may hold at most {describe_seconds(self._max_seconds)} of audio "
                "(--wyoming-max-audio-seconds).",
            )
        if self._resampler is None or self._format != (chunk.rate, width, channels):
            self._format = (chunk.rate, width, channels)
            self._resampler = Resampler(chunk.rate, width, channels)
        samples = self._resampler(chunk.audio)
        self._parts.append(samples)
        return samples

    def audio(self) -> Audio:
        """The command's audio, 16 kHz mono, up to its end when one was heard (empty when no
        chunk came)."""
        if not self._parts:
            return Audio(np.zeros(0, dtype=np.int16))
        end = self._endpoint.end if self._endpoint is not None else None
        return Audio(np.concatenate(self._parts)[:end])
