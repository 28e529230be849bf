"""What vLLM counted for a transcription, and OpenAI's two usage shapes for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .responses import InputTokenDetails, UsageDuration, UsageTokens


@dataclass(frozen=True)
class Tokens:
    """Tokens read and written; `audio`: how many of those read were the audio's, None when
    vLLM did not say (it does with --enable-prompt-tokens-details, from 0.3x on)."""

    input: int = 0
    output: int = 0
    audio: int | None = 0

    @classmethod
    def of(cls, usage: Any) -> Tokens:
        """The counts of one vLLM answer's `usage` (absent: nothing counted)."""
        if not isinstance(usage, dict):
            return cls(audio=None)
        details = usage.get("prompt_tokens_details")
        modalities = details.get("multimodal_tokens") if isinstance(details, dict) else None
        audio = modalities.get("audio") if isinstance(modalities, dict) else None
        return cls(
            input=int(usage.get("prompt_tokens") or 0),
            output=int(usage.get("completion_tokens") or 0),
            audio=audio if isinstance(audio, int) else None,
        )

    def __add__(self, other: Tokens) -> Tokens:
        audio = None if self.audio is None or other.audio is None else self.audio + other.audio
        return Tokens(self.input + other.input, self.output + other.output, audio)

    def usage(self) -> UsageTokens:
        """OpenAI's usage for gpt-4o-transcribe-style models, with the audio/text split of
        the tokens read when it is known."""
        details = None
        if self.audio is not None and self.audio <= self.input:
            details = InputTokenDetails(
                audio_tokens=self.audio, text_tokens=self.input - self.audio
            )
        return UsageTokens(
            input_tokens=self.input,
            output_tokens=self.output,
            total_tokens=self.input + self.output,
            input_token_details=details,
        )

    def body(self) -> dict[str, Any]:
        """`usage` as the JSON object sent."""
        return self.usage().body()


def duration(seconds: float) -> UsageDuration:
    """OpenAI's usage for whisper-style transcription: the audio's length."""
    return UsageDuration(seconds=round(seconds, 3))
