"""Word times from Qwen3-ForcedAligner: the text it is given, and what its answer means.

The aligner hears the audio and reads the transcript with two `<timestamp>` tokens after
every unit (a word; each Chinese or Japanese character is a unit of its own) and classifies
each timestamp token into a bin of `segment_time` (80 ms in the released model): unit i starts
at its first token's bin and ends at its second's. Bins that came out of order are repaired as
Qwen's own processor does: the longest non-decreasing run is trusted; a gap of one or two
takes its nearest trusted neighbour, a longer one is spread evenly between its neighbours.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .languages import Language, resolve

TIMESTAMP = "<timestamp>"
MAX_SECONDS = 180.0  # audio per aligner pass: Qwen's own limit for the 0.6B aligner
SEGMENT_TIME = 0.08  # seconds per bin: the released checkpoint's timestamp_segment_time
# The languages Qwen3-ForcedAligner-0.6B was trained on
LANGUAGES = frozenset(
    resolve(code) for code in ("zh", "en", "yue", "fr", "de", "it", "ja", "ko", "pt", "ru", "es")
)
# The aligner's prompt is exactly the audio, then "word<timestamp><timestamp>...", with no chat
# roles; vLLM must be given this as --chat-template, since the checkpoint's own (ChatML) one
# would wrap the prompt silently.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{ part['text'] }}"
    "{%- elif 'audio' in part['type'] -%}<|audio_start|><|audio_pad|><|audio_end|>"
    "{%- endif -%}{%- endfor -%}{%- endif -%}{%- endfor -%}"
)
# Written without spaces: every character is a unit (Japanese words need a segmenter this
# server does not ship, so its units are characters too)
_BY_CHARACTER = frozenset(resolve(code) for code in ("zh", "yue", "ja"))
_SHORT_GAP = 2  # out-of-order bins in a row that take a neighbour's value, not a line
# What each character is to `units`: a unit alone (CJK), part of a word, silent inside a word
# (punctuation), or between words; a word runs from a letter to the last before a break.
_ALONE, _LETTER, _SILENT, _BREAK = "u", "w", "p", " "
_UNIT_OR_RUN = re.compile(f"{_ALONE}|[{_LETTER}{_SILENT}]++")
# A word longer than this is no word, and the alignment route refuses a text with one: the
# longest dictionary words of the aligner's languages are under 70 letters (German's
# Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz, 63), a URL or a chemical's
# name read aloud rarely passes 100, and a unit of 200 letters is already ~60 tokens.
MAX_WORD_CHARACTERS = 200


@dataclass(frozen=True)
class Word:
    """A unit of a transcript with its times; OpenAI's `words` show `word`, `start`, `end`.

    `first` and `last` say where it lies in the text it was aligned with (`Unit`'s), which is
    where subtitles cut that text."""

    word: str
    start: float  # seconds
    end: float
    first: int
    last: int
    speaker: str | None = None  # who says it, when a diarizer said
    placed: bool = True  # the aligner put it in order; False: its times were filled in


@dataclass(frozen=True)
class Unit:
    text: str  # what the aligner reads
    first: int  # where it lies in the transcript: text[first:last], a dash inside included
    last: int


def units(text: str, language: Language | None) -> list[Unit]:
    """The units the aligner times, in order: words of letters, digits and apostrophes
    (punctuation has no sound; inside a word it is dropped: "e-mail" is read "email"), and
    each CJK character on its own.

    Each distinct character is classified once and the text is read as a string of classes by
    the regex engine, so that a text of any length (a client's, up to 300,000 characters) is
    read in linear time at C speed, not a character at a time in Python."""
    kinds = {char: _kind(char, language) for char in set(text)}
    classes = text.translate({ord(char): kind for char, kind in kinds.items()})
    silent = {ord(char): None for char, kind in kinds.items() if kind == _SILENT}
    found = []
    for match in _UNIT_OR_RUN.finditer(classes):
        run = match.group()  # a unit, or letters and the punctuation between and around them
        first = match.start() + len(run) - len(run.lstrip(_SILENT))
        last = match.end() - len(run) + len(run.rstrip(_SILENT))
        if first < last:
            found.append(Unit(text[first:last].translate(silent), first, last))
    return found


def longest(found: Sequence[Unit]) -> Unit | None:
    """The unit with the most characters, None for none."""
    return max(found, key=lambda unit: len(unit.text), default=None)


def aligner_text(found: Sequence[Unit]) -> str:
    """The text part of the aligner's prompt for these units."""
    return "".join(f"{unit.text}{TIMESTAMP}{TIMESTAMP}" for unit in found)


def best_bins(rows: bytes, shape: tuple[int, int]) -> list[int]:
    """The most likely bin of each row of the aligner's float16 (little-endian) answer."""
    scores = np.frombuffer(rows, dtype="<f2").reshape(shape)
    return [int(bin_) for bin_ in scores.argmax(axis=1)]


def repair(bins: Sequence[float]) -> list[float]:
    """`bins` made non-decreasing: the longest non-decreasing subsequence is kept, the rest
    is filled from it (see the module)."""
    trusted = _longest_non_decreasing(bins)
    fixed = [float(value) for value in bins]
    index = 0
    while index < len(fixed):
        if trusted[index]:
            index += 1
            continue
        end = index
        while end < len(fixed) and not trusted[end]:
            end += 1
        left = fixed[index - 1] if index > 0 else None
        right = fixed[end] if end < len(fixed) else None
        for k in range(index, end):
            fixed[k] = _fill(left, right, k - index, end - index)
        index = end
    return fixed


def words(
    found: Sequence[Unit], bins: Sequence[float], segment_time: float, offset: float = 0.0
) -> list[Word]:
    """Each unit with its times in seconds, `offset` added (where this pass's audio began)."""
    if len(bins) != 2 * len(found):
        raise ValueError(f"{len(found)} units need {2 * len(found)} bins, got {len(bins)}")
    times = [offset + value * segment_time for value in repair(bins)]
    return [
        Word(
            unit.text,
            round(times[2 * i], 3),
            round(times[2 * i + 1], 3),
            unit.first,
            unit.last,
            placed=honest,
        )
        for i, (unit, honest) in enumerate(zip(found, placed(bins), strict=True))
    ]


def placed(bins: Sequence[float]) -> list[bool]:
    """Which units (two bins each) the aligner placed itself: both their bins are in the
    longest non-decreasing run that `repair` trusts. The others' times were filled in from
    their neighbours: many of them say the text and the audio disagree."""
    trusted = _longest_non_decreasing(bins)
    return [trusted[2 * i] and trusted[2 * i + 1] for i in range(len(bins) // 2)]


def _fill(left: float | None, right: float | None, position: int, length: int) -> float:
    """The value for the `position`-th of `length` untrusted bins between two trusted ones."""
    if left is None:  # the first values are out of order: they take the first kept one
        return right if right is not None else 0.0
    if right is None:
        return left
    if length <= _SHORT_GAP:
        return left if position + 1 <= length - position else right
    return left + (right - left) * (position + 1) / (length + 1)


def _longest_non_decreasing(values: Sequence[float]) -> list[bool]:
    """Which values belong to a longest non-decreasing subsequence (patience sorting, so an
    hour of words costs milliseconds)."""
    tails: list[float] = []  # the smallest last value of a run of each length
    ends: list[int] = []  # the index of that value
    parent = [-1] * len(values)
    for index, value in enumerate(values):
        length = bisect.bisect_right(tails, value)
        parent[index] = ends[length - 1] if length else -1
        if length == len(tails):
            tails.append(value)
            ends.append(index)
        else:
            tails[length], ends[length] = value, index
    kept = [False] * len(values)
    index = ends[-1] if ends else -1
    while index != -1:
        kept[index] = True
        index = parent[index]
    return kept


def _kind(char: str, language: Language | None) -> str:
    if _is_cjk(char) or (language in _BY_CHARACTER and _is_kana(char)):
        return _ALONE
    if char == "'" or unicodedata.category(char)[0] in "LN":
        return _LETTER
    if char.isspace() or language in _BY_CHARACTER:  # CJK punctuation is a space too
        return _BREAK
    return _SILENT


def _is_cjk(char: str) -> bool:
    return unicodedata.name(char, "").startswith(("CJK UNIFIED", "CJK COMPATIBILITY IDEOGRAPH"))


def _is_kana(char: str) -> bool:
    return unicodedata.name(char, "").startswith(("HIRAGANA", "KATAKANA"))
