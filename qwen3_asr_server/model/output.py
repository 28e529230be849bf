"""Turn what Qwen3-ASR emits into the text a client should see.

The model answers `language English<asr_text>Hello`; older stacks render the tag as a line
break (`language English\\nHello`, `language English,\\nHello`). `language None` means it heard
no speech. One streaming cleaner does all the work, so a streamed answer and a whole one are
cleaned by the same rules, however the upstream splits its chunks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import languages
from .languages import Language

ASR_TEXT_TAG = "<asr_text>"
NO_SPEECH = "None"
_HEAD = "language "
# The language name before the tag may be anything short; before a bare line break it must
# look like a language name, so that a transcript such as "language models\n..." survives.
_PREFIX = re.compile(r"language (?:([^<\n]{0,40})<asr_text>|([A-Z][a-z]+),?\n)")
_MAX_NAME = 41  # 40 name characters and an optional comma
# Mid-answer only a one-word name counts: "the language English is fine." is transcript
_SEGMENT = re.compile(r"language ([A-Za-z]{1,20})<asr_text>")
CONTROL_TOKEN = re.compile(r"<\|[^|]*\|>")  # ChatML's <|im_end|>, <|audio_pad|>, ...


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

    @property
    def decided(self) -> bool:
        """Whether it is known yet if the answer starts with a language prefix."""
        return self._decided

    @property
    def silent(self) -> bool:
        """The model said `language None`: nothing it writes is transcript."""
        return self._silent

    @property
    def spoken_language(self) -> Language | None:
        """The language the model heard; None when it named none, or one this server does not
        know, or heard no speech (`language None`)."""
        if self._silent or self.language is None:
            return None
        return languages.named(self.language)

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


class SegmentedCleaner:
    """The same cleaning for vLLM's realtime endpoint, whose answer for one utterance is the
    answers for its 5 s segments run together, each with its own prefix
    (`language English<asr_text>Hello.language English<asr_text>And then`): every prefix is
    dropped wherever it comes, a `language None` segment's text with it, and the segments'
    texts are joined by a space."""

    def __init__(self) -> None:
        self._held = ""  # text that may be the start of the next segment's prefix
        self._silent = False  # the current segment is `language None`
        self._segment_start = True  # no text of the current segment went out yet
        self._written = False  # some text went out
        self._language: Language | None = None  # the current segment's
        self.spoken: list[Language] = []  # the languages of segments with text, first first

    def feed(self, piece: str) -> str:
        pending, self._held = self._held + piece, ""
        out = ""
        while pending:
            start = _head_start(pending)
            if start is None:
                return out + self._text(pending)
            out += self._text(pending[:start])
            head = pending[start:]
            match = _SEGMENT.match(head)
            if match:
                self._silent = match.group(1) == NO_SPEECH
                self._language = languages.named(match.group(1))
                self._segment_start = True
                pending = head[match.end() :]
            elif _could_become_segment(head):
                self._held = head
                return out
            else:
                out += self._text(head[0])
                pending = head[1:]
        return out

    def finish(self) -> str:
        """What was held back: the answer ended while it still looked like a prefix."""
        held, self._held = self._held, ""
        return self._text(held)

    def _text(self, text: str) -> str:
        if self._silent:
            return ""
        if self._segment_start:
            text = text.lstrip()
            if not text:
                return ""
            self._segment_start = False
            if self._written:
                text = " " + text
            if self._language is not None and self._language not in self.spoken:
                self.spoken.append(self._language)
        self._written = True
        return text


def _could_become_segment(head: str) -> bool:
    """Whether more text could still complete `head` into a `_SEGMENT` prefix."""
    if len(head) <= len(_HEAD):
        return _HEAD.startswith(head)
    name, bracket, tag = head[len(_HEAD) :].partition("<")
    fits = head.startswith(_HEAD) and len(name) <= 20 and (name.isalpha() or not name)
    return fits and (not bracket or ASR_TEXT_TAG.startswith(bracket + tag))


def _head_start(text: str) -> int | None:
    """Where the first possible language prefix in `text` begins: a whole `language `, or an
    end of `text` that more text could turn into one."""
    whole = text.find(_HEAD)
    for size in range(min(len(_HEAD) - 1, len(text)), 0, -1):
        if _HEAD.startswith(text[-size:]) and (whole < 0 or len(text) - size < whole):
            return len(text) - size
    return whole if whole >= 0 else None


@dataclass(frozen=True)
class Cleaned:
    text: str
    language: str | None  # as the model named it ("English", "None"), if it did
    spoken_language: Language | None  # see StreamCleaner.spoken_language


def clean(raw: str) -> Cleaned:
    """The client-visible text of one whole answer."""
    cleaner = StreamCleaner()
    text = (cleaner.feed(raw) + cleaner.finish()).rstrip()
    return Cleaned(text, cleaner.language, cleaner.spoken_language)


class LogprobFilter:
    """Keep the log-probability entries of the transcript's own tokens, as vLLM sent them.

    vLLM reports one entry per generated token, the `language X<asr_text>` prefix and the
    end-of-turn token included; the client's text has neither. The tokens are run through a
    cleaner of their own: those it holds back until it has seen the prefix are dropped with
    it, unless the answer turns out to have no prefix.
    """

    def __init__(self) -> None:
        self._cleaner = StreamCleaner()
        self._held: list[dict[str, Any]] = []

    def feed(self, entries: Iterable[Any]) -> list[dict[str, Any]]:
        kept: list[dict[str, Any]] = []
        for entry in entries:
            token = entry.get("token") if isinstance(entry, dict) else None
            if not isinstance(token, str) or CONTROL_TOKEN.fullmatch(token):
                continue
            if self._cleaner.decided:
                kept += [] if self._cleaner.silent else [entry]
                continue
            text = self._cleaner.feed(token)
            self._held.append(entry)
            if self._cleaner.decided:
                kept += self._release(text)
        return kept

    def finish(self) -> list[dict[str, Any]]:
        if self._cleaner.decided:
            return []
        return self._release(self._cleaner.finish())

    def _release(self, text: str) -> list[dict[str, Any]]:
        held, self._held = self._held, []
        if self._cleaner.silent:
            return []
        if self._cleaner.language is None:
            return held  # no prefix: every held token is text
        return held[-1:] if text else []  # the token that ended the prefix also began the text


def transcription_logprob(entry: dict[str, Any]) -> dict[str, Any]:
    """A vLLM chat logprob entry in the shape OpenAI's transcriptions use."""
    token = str(entry["token"])
    raw = entry.get("bytes")
    return {
        "token": token,
        "logprob": float(entry.get("logprob", 0.0)),
        "bytes": raw if isinstance(raw, list) else list(token.encode()),
    }
