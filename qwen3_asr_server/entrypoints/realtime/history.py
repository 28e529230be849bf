"""What a session tells the model about itself: its prompt and keywords, then the transcripts
of the utterances before, so that names and spellings carry over from one to the next."""

from __future__ import annotations

from ...model import prompt
from .protocol import SessionConfig

MAX_CHARS = 1000  # of earlier transcripts kept as context


class History:
    def __init__(self, limit: int) -> None:
        self.limit = limit  # UTF-8 bytes of context that fit (`prompt.context_limit`)
        self._transcripts: list[str] = []

    def remember(self, transcript: str) -> None:
        if transcript:
            self._transcripts.append(transcript)
            while len(self._transcripts) > 1 and sum(map(len, self._transcripts)) > MAX_CHARS:
                self._transcripts.pop(0)

    def context(self, config: SessionConfig) -> str | None:
        """The session's own context, then as much of the latest transcripts as fits."""
        own = prompt.context(config.prompt, config.keywords)
        room = self.limit - len((own or "").encode()) - 1
        latest = " ".join(self._transcripts)[-MAX_CHARS:].encode()
        earlier = latest[-room:].decode(errors="ignore") if room > 0 else ""  # cut: left out
        return "\n".join(part for part in (own, earlier) if part) or None
