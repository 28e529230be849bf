"""Turn what Qwen3-ASR emits into the text a client should see.

The model answers `language English<asr_text>Hello`; older stacks render the tag as a line
break (`language English\\nHello`, `language English,\\nHello`). `language None` means it heard
no speech. One streaming cleaner does all the work, so a streamed answer and a whole one are
cleaned by the same rules, however the upstream splits its chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ASR_TEXT_TAG = "<asr_text>"
NO_SPEECH = "None"
_HEAD = "language "
# The language name before the tag may be anything short; before a bare line break it must
# look like a language name, so that a transcript such as "language models\n..." survives.
_PREFIX = re.compile(r"language (?:([^<\n]{0,40})<asr_text>|([A-Z][a-z]+),?\n)")
_MAX_NAME = 41  # 40 name characters and an optional comma


def _could_become_prefix(head: str) -> bool:
    """Whether more text could still complete `head` into a language prefix."""
    if len(head) <= len(_HEAD):
        return _HEAD.startswith(head)
    if not head.startswith(_HEAD):
        return False
    rest = head[len(_HEAD) :]
    if "\n" in rest:
        return False
    name, bracket, tag = rest.partition("<")
    if bracket:
        return len(name) <= _MAX_NAME - 1 and ASR_TEXT_TAG.startswith(bracket + tag)
    return len(rest) <= _MAX_NAME


class StreamCleaner:
    """Feed raw model text in pieces; get back only what the client should see.

    Text is held back only while it could still be the start of a language prefix (at most
    ~50 characters, once per answer); after that every piece passes straight through.
    """

    def __init__(self) -> None:
        self.language: str | None = None
        self._pending = ""
        self._decided = False
        self._silent = False
        self._started = False

    def feed(self, piece: str) -> str:
        if self._silent:
            return ""
        if self._decided:
            return self._emit(piece)
        self._pending += piece
        head = self._pending.lstrip()
        match = _PREFIX.match(head)
        if match:
            self._decided = True
            self._pending = ""
            self.language = match.group(1) or match.group(2)
            if self.language.strip() == NO_SPEECH:
                self._silent = True
                return ""
            return self._emit(head[match.end() :])
        if _could_become_prefix(head):
            return ""
        return self._release()

    def finish(self) -> str:
        """Flush what was held back: an answer that ended while it still looked like a prefix."""
        if self._silent or self._decided:
            return ""
        return self._release()

    def _release(self) -> str:
        self._decided = True
        held, self._pending = self._pending, ""
        return self._emit(held)

    def _emit(self, text: str) -> str:
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text


@dataclass(frozen=True)
class Cleaned:
    text: str
    language: str | None  # as the model named it ("English"), if it did


def clean(raw: str) -> Cleaned:
    """The client-visible text of one whole answer."""
    cleaner = StreamCleaner()
    text = (cleaner.feed(raw) + cleaner.finish()).rstrip()
    return Cleaned(text, cleaner.language)
