from __future__ import annotations

import pytest

from qwen3_asr_server.entrypoints.alignments.sharing import shares
from qwen3_asr_server.model.alignment import units
from qwen3_asr_server.model.languages import resolve

ENGLISH = resolve("en")


def _shared(given: str, heard: list[str], seconds: list[float] | None = None) -> list[str]:
    """The given text's words each piece gets, as text."""
    found = units(given, ENGLISH)
    pieces = [units(text, ENGLISH) for text in heard]
    ranges = shares(found, pieces, seconds or [1.0] * len(heard))
    return [" ".join(unit.text for unit in found[r.start : r.stop]) for r in ranges]


def test_each_word_goes_to_the_piece_that_heard_it() -> None:
    given = "The cat sat on the mat. It purred. Then it slept."
    heard = ["the cat sat on the mat", "it purred then", "it slept"]
    assert _shared(given, heard) == ["The cat sat on the mat", "It purred Then", "it slept"]


def test_misheard_words_are_spread_over_what_was_heard_instead() -> None:
    given = "alpha beta gamma delta epsilon zeta"
    heard = ["alpha bait a", "gamer delta epsilon zeta"]
    # "beta gamma" stand against "bait a gamer": beta with bait, gamma with a
    assert _shared(given, heard) == ["alpha beta gamma", "delta epsilon zeta"]


def test_words_nobody_heard_go_with_the_piece_before() -> None:
    given = "one two three four five six"
    heard = ["one two", "five six"]
    assert _shared(given, heard) == ["one two three four", "five six"]


def test_words_before_anything_heard_go_to_the_first_piece() -> None:
    assert _shared("zero one two", ["one", "two"]) == ["zero one", "two"]


def test_a_piece_that_heard_nothing_of_the_text_gets_nothing() -> None:
    assert _shared("one two three", ["one two", "music", "three"]) == ["one two", "", "three"]


def test_without_any_transcript_the_words_go_by_the_pieces_lengths() -> None:
    given = "a b c d e f g h"
    assert _shared(given, ["", ""], [30.0, 10.0]) == ["a b c d e f", "g h"]


@pytest.mark.parametrize("heard", [[], ["one"]])
def test_an_empty_text_gets_no_words(heard: list[str]) -> None:
    assert _shared("", heard) == [""] * len(heard)


def test_no_piece_gets_more_words_than_its_seconds_have_room_for() -> None:
    # 1 s has room for 30 words (the floor), 4 s for 40: what is over goes to the next piece
    given = " ".join(f"w{index}" for index in range(50))
    shared = _shared(given, [given, "", ""], [1.0, 4.0, 1.0])
    assert [len(words.split()) for words in shared] == [30, 20, 0]
    assert " ".join(shared).split() == given.split()


def test_words_over_the_last_piece_go_back_to_those_before_it() -> None:
    given = " ".join(f"w{index}" for index in range(70))
    shared = _shared(given, ["", "", given], [1.0, 1.0, 1.0])
    assert [len(words.split()) for words in shared] == [10, 30, 30]
    assert " ".join(shared).split() == given.split()
