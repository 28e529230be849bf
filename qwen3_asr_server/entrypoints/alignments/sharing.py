"""A given text shared among the pieces of a long recording, so that each piece is aligned in
a pass of its own (at most alignment.MAX_SECONDS of audio).

The pieces were transcribed; the given text's words are matched to the transcript's (difflib,
on case-folded words), and each word goes to the piece of the transcript word it matched.
Where the two differ (a misheard word, a line the speaker skipped or added), the given words
of the differing run are spread evenly over the transcript words they stand against; words
that stand against none go with the piece before them. When the transcript has no word at all,
the words are shared in proportion to the pieces' lengths. No piece is given more words than
its length has `room` for: what is over goes on to the pieces after it (past the last, back to
those before), so that no pass overflows the aligner's context.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from difflib import SequenceMatcher
from itertools import accumulate

from ...model.alignment import Unit

# Units a second of audio may be aligned with. People say ~2-4 words a second, Chinese ~4-7
# characters: 10 is well past both, and a full 180 s pass at 10 (1,800 units of ~3 tokens,
# two of them <timestamp>s) fits the aligner's 8,192 beside its ~2,300 tokens of audio.
UNITS_PER_SECOND = 10
MIN_UNITS = 30  # however short the audio: a name or a quick phrase in a clip of a second


def room(seconds: float) -> int:
    """The most units `seconds` of audio are aligned with."""
    return max(MIN_UNITS, math.ceil(UNITS_PER_SECOND * seconds))


def shares(
    given: Sequence[Unit], heard: Sequence[Sequence[Unit]], seconds: Sequence[float]
) -> list[range]:
    """For each piece (its transcript's units `heard`, its length in `seconds`), the range of
    `given`'s units it is aligned with: in order, together all of them, some maybe empty, none
    longer than its piece's `room`. `given` must fit in the pieces' rooms together."""
    owners = _matched(given, heard) if any(heard) else _by_length(len(given), seconds)
    counts = [
        bisect.bisect_right(owners, piece) - bisect.bisect_left(owners, piece)
        for piece in range(len(heard))
    ]
    capped = _capped(counts, [room(each) for each in seconds])
    return [range(end - count, end) for end, count in zip(accumulate(capped), capped, strict=True)]


def _capped(counts: Sequence[int], rooms: Sequence[int]) -> list[int]:
    """`counts` with none over its room: the units over one go on to the next piece, and
    those over the last back to the nearest pieces before it with room left."""
    capped, over = [], 0
    for count, most in zip(counts, rooms, strict=True):
        capped.append(min(count + over, most))
        over = count + over - capped[-1]
    for piece in reversed(range(len(capped))):
        taken = min(rooms[piece] - capped[piece], over)
        capped[piece] += taken
        over -= taken
    assert over == 0, "the units must fit in the pieces' rooms"
    return capped


def _matched(given: Sequence[Unit], heard: Sequence[Sequence[Unit]]) -> list[int]:
    """The piece of each given unit, from the transcript's words it matches (non-decreasing:
    difflib's matches keep the order of both)."""
    pieces = [piece for piece, units in enumerate(heard) for _ in units]
    spoken = [unit.text.casefold() for units in heard for unit in units]
    matcher = SequenceMatcher(None, [unit.text.casefold() for unit in given], spoken)
    owners: list[int] = []
    for _, first, last, heard_first, heard_last in matcher.get_opcodes():
        count = last - first
        for k in range(count):
            if heard_last > heard_first:  # against transcript words: spread over them
                index = heard_first + k * (heard_last - heard_first) // count
            else:  # against none: the piece before (the first piece, at the start)
                index = max(heard_first - 1, 0)
            owners.append(pieces[index])
    return owners


def _by_length(count: int, seconds: Sequence[float]) -> list[int]:
    """The piece of each of `count` units, spread over the pieces as their lengths are."""
    ends = list(accumulate(seconds))
    total = ends[-1] if ends else 0.0
    if total <= 0:
        return [0] * count
    return [
        min(bisect.bisect_right(ends, (k + 0.5) * total / count), len(ends) - 1)
        for k in range(count)
    ]
