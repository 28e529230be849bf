"""SubRip (.srt) and WebVTT (.vtt) files from timed segments: pure text work.

A segment can hold 30 s of speech, too much for one cue, so cues are made in one of three
ways: a whole segment as one `Cue`, only where the caller knows it is short; `estimated_cues`,
a segment without word times cut into readable cues whose times are shared out by text length;
`sentence_cues`, cut at sentence ends (and inside sentences too long to read at once) with
word-accurate times, when word times are known. A cue's text is wrapped to lines of at most
`LINE_WIDTH` characters (at spaces; scripts written without spaces, such as Chinese or
Japanese, at any character), which subtitle players show as one block.
"""

from __future__ import annotations

import html
import re
import textwrap
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from ..model.alignment import Word

LINE_WIDTH = 42  # the usual broadcast limit for one subtitle line
MAX_CUE_CHARS = 2 * LINE_WIDTH  # two full lines
MAX_CUE_SECONDS = 7.0  # longer cues outstay the speech they show or are hard to read along

# Look-alikes of ASCII marks on purpose (RUF001): full-width and typographic punctuation
_CLOSERS = re.escape("\"'”’»›)]}」』）】")  # noqa: RUF001
_OPENERS = "¿¡([{«‹“‘「『（【《〈"  # noqa: RUF001
# "." also sits inside "3.5" or "e.g.x"; it ends a sentence only before a space
_SENTENCE_END = re.compile(rf"[。！？]|[.!?…؟।]+[{_CLOSERS}]*\s")  # noqa: RUF001
_CLAUSE_END = re.compile(rf"[，、；：]|[,;:][{_CLOSERS}]*\s|\s[—–]\s")  # noqa: RUF001
_LETTER = re.compile(r"\w")
_WORD = re.compile(r"\w(?:\S*\w)?")  # from the first letter of a run of non-space to its last


@dataclass(frozen=True)
class Cue:
    start: float  # seconds
    end: float
    text: str
    speaker: str | None = None  # who says it, when a diarizer said


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


def sentence_cues(text: str, words: Sequence[Word]) -> list[Cue]:
    """Cues of whole sentences, split further where one would be too long to read
    (`MAX_CUE_CHARS` columns, `MAX_CUE_SECONDS` from its first word's start to its last's end).

    `words` are in text order. The text between words (punctuation) stays in the cues; text
    before the first word or after the last goes to the first or last cue.
    """
    if not words:
        return []
    gaps = [text[before.last : after.first] for before, after in pairwise(words)]
    # bounds[i]: where the text of a cue whose first word is words[i] begins
    bounds = [
        0,
        *(word.last + _split(gap) for word, gap in zip(words[:-1], gaps, strict=True)),
        len(text),
    ]
    starts = [0]
    for i, gap in enumerate(gaps, start=1):
        if _SENTENCE_END.search(gap):
            starts.append(i)
        while starts[-1] < i and _too_long(
            text[bounds[starts[-1]] : bounds[i + 1]], words[i].end - words[starts[-1]].start
        ):
            starts.append(_clause_cut(text, bounds, gaps, starts[-1], i))
    return [
        Cue(words[a].start, words[b - 1].end, " ".join(text[bounds[a] : bounds[b]].split()))
        for a, b in pairwise([*starts, len(words)])
    ]


def estimated_cues(start: float, end: float, text: str) -> list[Cue]:
    """Readable cues from one segment's text without word times: `sentence_cues`, given word
    times made up by sharing `start`..`end` out in proportion to display columns.

    So the cuts are the same with and without an aligner: every sentence end ends a cue (two
    short sentences never share one: a sentence a cue is the simpler rule, and reads best); a
    sentence over `MAX_CUE_CHARS` or `MAX_CUE_SECONDS` is cut greedily, at its last clause end
    that leaves the cue at least half full, else before the word that would overflow it. A
    word of a spaced script is never broken; text with wide characters may be at any letter.
    Each cue lasts its share of the columns (with the space before it), so the cues follow one
    another from `start` to `end`; a segment of no length gives cues of no length at `start`.
    """
    end = max(start, end)
    spans = _units(text)
    if not spans:  # punctuation alone, or nothing
        normal = " ".join(text.split())
        return [Cue(start, end, normal)] if normal else []
    total = _columns(text)
    shares = [_columns(text[:first]) / total for first, _ in spans[1:]]
    # min(): rounding must not take a word past the segment's end
    begins = [start, *(min(end, start + (end - start) * share) for share in shares)]
    words = [
        Word(text[first:last], begin, finish, first, last)
        for (first, last), begin, finish in zip(spans, begins, [*begins[1:], end], strict=True)
    ]
    return sentence_cues(text, words)


def _units(text: str) -> list[tuple[int, int]]:
    """Where the words lie that a cue may begin or end at: each letter of a run of non-space
    that holds a wide character (as `wrap` breaks it), else the run from its first letter to
    its last, leaving the marks around it between words, where `sentence_cues` looks for
    sentence and clause ends."""
    units: list[tuple[int, int]] = []
    for run in re.finditer(r"\S+", text):
        pattern = _LETTER if any(map(_is_wide, run.group())) else _WORD
        units += [match.span() for match in pattern.finditer(text, run.start(), run.end())]
    return units


def _split(gap: str) -> int:
    """Where a cut divides the text between two words: marks closing a sentence or quote stay
    with the word before, opening ones (¿, «, brackets) go with the word after."""
    spaces = [k for k, char in enumerate(gap) if char.isspace()]
    return spaces[-1] if spaces else len(gap.rstrip(_OPENERS))


def _columns(text: str) -> int:
    return sum(2 if _is_wide(char) else 1 for char in " ".join(text.split()))


def _too_long(text: str, seconds: float) -> bool:
    return _columns(text) > MAX_CUE_CHARS or seconds > MAX_CUE_SECONDS


def _clause_cut(text: str, bounds: list[int], gaps: list[str], first: int, last: int) -> int:
    """Where to end the cue from words[first] that words[last] would make too long: after its
    last clause (comma, semicolon, dash) if that leaves it at least half full, else before
    words[last]."""
    half = _columns(text[bounds[first] : bounds[last]]) / 2
    for k in range(last, first, -1):
        if _columns(text[bounds[first] : bounds[k]]) < half:
            break
        if _CLAUSE_END.search(gaps[k - 1]):
            return k
    return last


def _blocks(cues: Sequence[Cue], separator: str, numbered: bool) -> list[str]:
    blocks = []
    for number, cue in enumerate((cue for cue in cues if cue.text.strip()), start=1):
        timing = f"{timestamp(cue.start, separator)} --> {timestamp(cue.end, separator)}"
        # "-->" inside a cue's text would end its timing line early in either format
        text = cue.text.replace("-->", "->")
        if cue.speaker is None:
            lines = wrap(text)
        elif numbered:  # SubRip has no voices: the speaker leads the text
            lines = wrap(f"[{cue.speaker}] {text}")
        else:  # a WebVTT voice span; its name may not hold "<", "&" or ">"
            voice = html.escape(cue.speaker.replace("-->", "->"), quote=False)
            lines = wrap(text)
            lines[0] = f"<v {voice}>{lines[0]}"
            lines[-1] += "</v>"
        blocks.append("\n".join(([str(number)] if numbered else []) + [timing, *lines]))
    return blocks


def srt(cues: Sequence[Cue]) -> str:
    return "".join(block + "\n\n" for block in _blocks(cues, ",", numbered=True))


def vtt(cues: Sequence[Cue]) -> str:
    """WebVTT; a cue's speaker is its voice (`<v A>...</v>`)."""
    return "WEBVTT\n\n" + "".join(block + "\n\n" for block in _blocks(cues, ".", numbered=False))
