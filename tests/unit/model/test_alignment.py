from __future__ import annotations

import itertools
import unicodedata

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qwen3_asr_server.model.alignment import (
    MAX_WORD_CHARACTERS,
    Unit,
    Word,
    aligner_text,
    best_bins,
    longest,
    placed,
    repair,
    units,
    words,
)
from qwen3_asr_server.model.languages import resolve

ENGLISH = resolve("en")


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("Hello, world!", "English", ["Hello", "world"]),
        ("It's 4 o'clock -- fine.", "English", ["It's", "4", "o'clock", "fine"]),
        ("Ça va? Très bien.", "French", ["Ça", "va", "Très", "bien"]),
        ("你好，世界。", "Chinese", ["你", "好", "世", "界"]),
        ("我用Qwen3转写", "Chinese", ["我", "用", "Qwen3", "转", "写"]),
        ("Qwen3 是模型", "English", ["Qwen3", "是", "模", "型"]),  # CJK split in any language
        ("こんにちは、世界", "Japanese", ["こ", "ん", "に", "ち", "は", "世", "界"]),
        ("안녕하세요 세계", "Korean", ["안녕하세요", "세계"]),
        ("Привет, мир", "Russian", ["Привет", "мир"]),
        ("re-use it", "English", ["reuse", "it"]),
        ("... !!", "English", []),
        ("", None, []),
    ],
)
def test_units(text: str, language: str | None, expected: list[str]) -> None:
    found = units(text, resolve(language) if language else None)
    assert [unit.text for unit in found] == expected
    for unit in found:  # each lies where it was read, punctuation inside a word included
        assert text[unit.first : unit.last].replace("-", "") == unit.text


def test_units_keep_where_a_word_with_punctuation_inside_lies() -> None:
    assert units("an e-mail.", ENGLISH) == [Unit("an", 0, 2), Unit("email", 3, 9)]


def _read_a_character_at_a_time(text: str, language: str | None) -> list[Unit]:
    """What `units` means, read as the docstring says (in quadratic time)."""
    by_character = language in ("Chinese", "Cantonese", "Japanese")
    found: list[Unit] = []
    word, first, last = "", 0, 0
    for index, char in enumerate(text):
        name = unicodedata.name(char, "")
        alone = name.startswith(("CJK UNIFIED", "CJK COMPATIBILITY IDEOGRAPH"))
        if alone or (by_character and name.startswith(("HIRAGANA", "KATAKANA"))):
            found += [Unit(word, first, last)] if word else []
            found.append(Unit(char, index, index + 1))
            word = ""
        elif char == "'" or unicodedata.category(char)[0] in "LN":
            first, word, last = first if word else index, word + char, index + 1
        elif char.isspace() or by_character:
            found += [Unit(word, first, last)] if word else []
            word = ""
    return found + ([Unit(word, first, last)] if word else [])


@given(
    st.text(alphabet=st.sampled_from("ab'1 -.,\n\u00e9\u4f60\u3053\u30ab\u3001\u0301")),
    st.sampled_from([None, "English", "Japanese", "Chinese"]),
)
def test_units_read_any_text_as_a_character_at_a_time(text: str, language: str | None) -> None:
    expected = _read_a_character_at_a_time(text, language)
    assert units(text, resolve(language) if language else None) == expected


def test_a_long_word_is_one_unit_and_the_longest() -> None:
    word = "x" * (100 * MAX_WORD_CHARACTERS)
    found = units(f"a {word}-{word} b", ENGLISH)
    assert [len(unit.text) for unit in found] == [1, 2 * len(word), 1]
    assert longest(found) == found[1]
    assert longest([]) is None


def test_aligner_text_puts_two_timestamps_after_every_unit() -> None:
    assert aligner_text(units("Hello world", ENGLISH)) == (
        "Hello<timestamp><timestamp>world<timestamp><timestamp>"
    )
    assert aligner_text([]) == ""


def test_best_bins_reads_little_endian_float16_rows() -> None:
    scores = np.zeros((3, 6), dtype="<f2")
    scores[0, 2] = scores[1, 5] = scores[2, 0] = 1.5
    scores[2, 0] = -1.0  # row 2: every score 0 but one negative: the first 0 wins
    assert best_bins(scores.tobytes(), (3, 6)) == [2, 5, 1]


@pytest.mark.parametrize(
    ("bins", "fixed"),
    [
        ([1, 2, 3, 4], [1, 2, 3, 4]),
        ([1, 2, 2, 4], [1, 2, 2, 4]),  # equal neighbours are in order
        ([1, 9, 3, 4], [1, 1, 3, 4]),  # one stray: the nearer kept neighbour (left on a tie)
        ([1, 2, 9, 9, 5, 6], [1, 2, 2, 5, 5, 6]),  # two: each takes its nearer neighbour
        ([7, 1, 2, 3], [1, 1, 2, 3]),  # out of order at the start: the first kept value
        ([1, 2, 3, 0], [1, 2, 3, 3]),  # ... at the end: the last kept value
        ([], []),
    ],
)
def test_repair(bins: list[int], fixed: list[float]) -> None:
    assert repair(bins) == pytest.approx(fixed)


def test_repair_interpolates_a_long_run_out_of_order() -> None:
    # three bins the model got wrong between 11 and 12: spread evenly between them
    fixed = repair([10, 11, 90, 91, 92, 12, 13, 14, 15])
    assert fixed == pytest.approx([10, 11, 11.25, 11.5, 11.75, 12, 13, 14, 15])


def test_repair_is_fast_and_monotonic_for_an_hour_of_words() -> None:
    rng = np.random.default_rng(0)
    bins = np.sort(rng.integers(0, 45000, 20000)).tolist()
    for index in rng.integers(0, len(bins), 500).tolist():
        bins[index] = int(rng.integers(0, 45000))  # the model's mistakes
    fixed = repair(bins)
    assert all(a <= b for a, b in itertools.pairwise(fixed))


def test_words_take_rows_in_pairs_and_add_the_offset() -> None:
    found = units("Hello, world.", ENGLISH)
    assert words(found, [5, 10, 15, 20], 0.08, offset=30.0) == [
        Word("Hello", 30.4, 30.8, 0, 5),
        Word("world", 31.2, 31.6, 7, 12),
    ]
    with pytest.raises(ValueError, match="2 units need 4 bins"):
        words(found, [5, 10, 15], 0.08)


@pytest.mark.parametrize(
    ("bins", "expected"),
    [
        ([1, 2, 3, 4], [True, True]),
        ([1, 2, 2, 4], [True, True]),  # equal neighbours are in order
        ([1, 2, 90, 3, 4, 5], [True, False, True]),  # a stray start: its unit was filled in
        ([1, 2, 3, 90, 4, 5], [True, False, True]),  # ... or a stray end
        ([], []),
    ],
)
def test_placed_units_have_both_bins_in_the_trusted_run(
    bins: list[int], expected: list[bool]
) -> None:
    assert placed(bins) == expected


def test_words_say_which_were_filled_in() -> None:
    found = units("one two three", ENGLISH)
    timed = words(found, [1, 2, 90, 91, 3, 4], 0.08)
    assert [word.placed for word in timed] == [True, False, True]
    assert [word.start for word in timed] == pytest.approx([0.08, 0.16, 0.24])
