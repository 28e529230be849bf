"""SubRip (.srt) and WebVTT (.vtt) files from timed segments: pure text work.

One cue per segment. A segment can hold 30 s of speech, so its text is wrapped to lines of
at most `LINE_WIDTH` characters (at spaces; scripts written without spaces, such as Chinese
or Japanese, at any character), which subtitle players show as one block.
"""

from __future__ import annotations

import textwrap
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LINE_WIDTH = 42  # the usual broadcast limit for one subtitle line


@dataclass(frozen=True)
class Cue:
    start: float  # seconds
    end: float
    text: str


def timestamp(seconds: float, separator: str) -> str:
    """HH:MM:SS<separator>mmm; SRT uses a comma, WebVTT a full stop."""
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def _is_wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def wrap(text: str, width: int = LINE_WIDTH) -> list[str]:
    """Readable lines of at most `width` columns (a wide CJK character counts as two)."""
    lines: list[str] = []
    for line in textwrap.wrap(" ".join(text.split()), width, break_long_words=False):
        lines.extend(_wrap_wide(line, width) if any(map(_is_wide, line)) else [line])
    return lines


def _wrap_wide(line: str, width: int) -> Iterable[str]:
    """Break text written without spaces by display width."""
    current, columns = "", 0
    for char in line:
        cost = 2 if _is_wide(char) else 1
        if columns + cost > width and current.strip():
            yield current.strip()
            current, columns = "", 0
        current += char
        columns += cost
    if current.strip():
        yield current.strip()


def _blocks(cues: Sequence[Cue], separator: str, numbered: bool) -> list[str]:
    blocks = []
    for number, cue in enumerate((cue for cue in cues if cue.text.strip()), start=1):
        timing = f"{timestamp(cue.start, separator)} --> {timestamp(cue.end, separator)}"
        # "-->" inside a cue's text would end its timing line early in either format
        text = cue.text.replace("-->", "->")
        lines = ([str(number)] if numbered else []) + [timing, *wrap(text)]
        blocks.append("\n".join(lines))
    return blocks


def srt(cues: Sequence[Cue]) -> str:
    return "".join(block + "\n\n" for block in _blocks(cues, ",", numbered=True))


def vtt(cues: Sequence[Cue]) -> str:
    return "WEBVTT\n\n" + "".join(block + "\n\n" for block in _blocks(cues, ".", numbered=False))
