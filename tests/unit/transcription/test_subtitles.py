# Typographic and full-width punctuation is what these tests are about
# ruff: noqa: RUF001

from __future__ import annotations

import random
import re
import string
import unicodedata
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3_asr_server.model.alignment import Word
from qwen3_asr_server.transcription.subtitles import (
    MAX_CUE_CHARS,
    MAX_CUE_SECONDS,
    Cue,
    estimated_cues,
    sentence_cues,
    srt,
    timestamp,
    vtt,
    wrap,
)

CUES = [Cue(0.0, 2.5, "Hello world."), Cue(3.25, 3661.0066, "Second line.")]


@pytest.mark.parametrize(
    ("seconds", "separator", "expected"),
    [
        (0, ",", "00:00:00,000"),
        (2.5, ",", "00:00:02,500"),
        (3661.0066, ".", "01:01:01.007"),
        (59.9996, ".", "00:01:00.000"),
        (36000, ",", "10:00:00,000"),
        (-0.2, ",", "00:00:00,000"),
    ],
)
def test_timestamps(seconds: float, separator: str, expected: str) -> None:
    assert timestamp(seconds, separator) == expected


def test_srt_has_numbered_cues_with_comma_timestamps() -> None:
    assert srt(CUES) == (
        "1\n00:00:00,000 --> 00:00:02,500\nHello world.\n\n"
        "2\n00:00:03,250 --> 01:01:01,007\nSecond line.\n\n"
    )


def test_vtt_starts_with_its_header_and_uses_full_stops() -> None:
    assert vtt(CUES) == (
        "WEBVTT\n\n"
        "00:00:00.000 --> 00:00:02.500\nHello world.\n\n"
        "00:00:03.250 --> 01:01:01.007\nSecond line.\n\n"
    )


def test_empty_cues_are_left_out_and_numbering_stays_dense() -> None:
    text = srt([Cue(0, 1, "  "), *CUES])
    assert re.findall(r"^\d+$", text, re.M) == ["1", "2"]
    assert vtt([]) == "WEBVTT\n\n"


def test_long_text_wraps_at_spaces_to_readable_lines() -> None:
    text = " ".join(["word"] * 40)
    lines = wrap(text)
    assert all(len(line) <= 42 for line in lines)
    assert " ".join(lines) == text
    block = srt([Cue(0, 30, text)]).split("\n")
    assert block[2:-2] == lines


def test_text_without_spaces_wraps_by_display_width() -> None:
    text = "你好世界" * 15  # 60 wide characters = 120 columns
    lines = wrap(text)
    assert "".join(lines) == text
    assert [len(line) for line in lines] == [21, 21, 18]


def test_cue_text_cannot_break_the_timing_line() -> None:
    assert "-->" not in srt([Cue(0, 1, "a --> b\n\nc")]).split("\n", 2)[2]


WORD = r"(?:[^\W_]|')+"  # letters, digits and apostrophes, as the caller cuts words


def timed(
    text: str, times: list[tuple[float, float]] | None = None, pattern: str = WORD
) -> list[Word]:
    """The words of `text`, word i spoken from i to i + 0.5 s unless `times` says otherwise."""
    found = list(re.finditer(pattern, text))
    times = times or [(i, i + 0.5) for i in range(len(found))]
    return [
        Word(match.group(), start, end, match.start(), match.end())
        for match, (start, end) in zip(found, times, strict=True)
    ]


def texts(text: str, pattern: str = WORD) -> list[str]:
    """Cue texts when every word takes 0.1 s, so only the character limit applies."""
    count = len(re.findall(pattern, text))
    words = timed(text, [(i / 10, i / 10 + 0.1) for i in range(count)], pattern)
    return [cue.text for cue in sentence_cues(text, words)]


def test_cues_end_at_sentence_ends_with_word_times() -> None:
    text = "Hello world. How are\nyou?  Fine!"
    assert sentence_cues(text, timed(text)) == [
        Cue(0, 1.5, "Hello world."),
        Cue(2, 4.5, "How are you?"),
        Cue(5, 5.5, "Fine!"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("¿Qué tal? «Bien», gracias...", ["¿Qué tal?", "«Bien», gracias..."]),
        (' "Hi." ', ['"Hi."']),
        ('He said "Hi." Then he left.', ['He said "Hi."', "Then he left."]),
        ("(Yes!) No? [Maybe.] Fine…", ["(Yes!)", "No?", "[Maybe.]", "Fine…"]),
        ("Wait… what?! ‘Really?’ Yes.", ["Wait…", "what?!", "‘Really?’", "Yes."]),
        (
            "It costs 3.5 euros, i.e.roughly 4. Cheap.",
            ["It costs 3.5 euros, i.e.roughly 4.", "Cheap."],
        ),
        ("Dr. Who", ["Dr.", "Who"]),  # abbreviations are not told apart
        ("no punctuation at all", ["no punctuation at all"]),
    ],
)
def test_text_around_words_stays_with_its_sentence(text: str, expected: list[str]) -> None:
    assert texts(text) == expected


def test_chinese_cuts_at_full_width_marks_with_a_span_per_character() -> None:
    text = "你好。今天天气很好！我们走吧"
    cues = sentence_cues(text, timed(text, pattern=r"\w"))
    assert cues == [Cue(0, 1.5, "你好。"), Cue(2, 7.5, "今天天气很好！"), Cue(8, 11.5, "我们走吧")]


def test_opening_quotes_go_with_the_next_sentence_without_spaces() -> None:
    assert texts("他说：“你好。”“再见。”", pattern=r"\w") == ["他说：“你好。”", "“再见。”"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 17 words of 4 letters fill 84 columns exactly
        (" ".join(["word"] * 20), [" ".join(["word"] * 17), "word word word"]),
        # a comma in the second half is a better place to cut
        (
            " ".join(["word"] * 12) + ", " + " ".join(["word"] * 8),
            [" ".join(["word"] * 12) + ",", " ".join(["word"] * 8)],
        ),
        (
            " ".join(["word"] * 12) + " – " + " ".join(["word"] * 8),
            [" ".join(["word"] * 12) + " –", " ".join(["word"] * 8)],
        ),
        # one in the first half is not
        (
            "word, " + " ".join(["word"] * 19),
            ["word, " + " ".join(["word"] * 15), "word word word word"],
        ),
        ("天" * 50, ["天" * 42, "天" * 8]),
        ("天" * 30 + "，" + "天" * 20, ["天" * 30 + "，", "天" * 20]),
    ],
)
def test_long_sentences_are_cut_at_the_character_limit(text: str, expected: list[str]) -> None:
    pattern = r"\w" if "天" in text else WORD
    cues = texts(text, pattern)
    assert cues == expected
    assert all(sum(1 + (c == "天") for c in cue) <= MAX_CUE_CHARS for cue in cues)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "one two three four five six seven eight nine ten.",
            ["one two three four five six seven", "eight nine ten."],
        ),
        (
            "one two three four five; six seven eight nine ten.",
            ["one two three four five;", "six seven eight nine ten."],
        ),
        (
            "one two three four five — six seven eight nine ten.",
            ["one two three four five —", "six seven eight nine ten."],
        ),
        (
            "one, two three four five six seven eight nine ten.",
            ["one, two three four five six seven", "eight nine ten."],
        ),
    ],
)
def test_long_sentences_are_cut_at_the_seconds_limit(text: str, expected: list[str]) -> None:
    cues = sentence_cues(text, timed(text))  # a word a second: 7.5 s from 8 words
    assert [cue.text for cue in cues] == expected
    assert all(cue.end - cue.start <= MAX_CUE_SECONDS for cue in cues)
    assert cues[1].start == len(re.findall(WORD, expected[0]))


def test_a_word_over_a_limit_on_its_own_still_forms_a_cue() -> None:
    long_word = "x" * 100
    assert texts(f"a {long_word} b.") == ["a", long_word, "b."]
    text = "Hello there, world."
    cues = sentence_cues(text, timed(text, [(0, 10), (10, 10.5), (10.5, 20)]))
    assert cues == [Cue(0, 10, "Hello"), Cue(10, 10.5, "there,"), Cue(10.5, 20, "world.")]


def test_no_words_give_no_cues() -> None:
    assert sentence_cues("Hello.", []) == []
    assert sentence_cues("", []) == []


def test_sentence_cues_render_as_srt() -> None:
    text = "Hello world. Bye --> now."
    assert srt(sentence_cues(text, timed(text))) == (
        "1\n00:00:00,000 --> 00:00:01,500\nHello world.\n\n"
        "2\n00:00:02,000 --> 00:00:03,500\nBye -> now.\n\n"
    )


GAPS = [" ", " ", " ", ", ", ". ", "! ", "? ", "?! ", " — ", '." ', "... ", "  ", "\n", "; "]


def random_text(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(1, 60)):
        length = rng.choice([1, 2, 3, 5, 8, 12, 90])
        word = "".join(rng.choices(string.ascii_letters + string.digits, k=length))
        words.append(f"{word}'s" if rng.random() < 0.1 else word)
    text = "".join(word + rng.choice(GAPS) for word in words[:-1]) + words[-1]
    return rng.choice(["", "¿", '"', "  "]) + text + rng.choice(["", ".", "?!", " …  "])


@pytest.mark.parametrize("seed", range(200))
def test_random_texts_keep_every_word_once_and_in_order(seed: int) -> None:
    rng = random.Random(seed)
    text = random_text(rng)
    clock, times = 0.0, []
    for _ in re.finditer(WORD, text):
        clock += rng.choice([0, 0, 0.05, 0.3, 1, 4])
        start, clock = clock, clock + rng.choice([0, 0.2, 0.5, 2])
        times.append((start, clock))
    words = timed(text, times)
    cues = sentence_cues(text, words)

    assert " ".join(cue.text for cue in cues) == " ".join(text.split())
    assert all(a.end <= b.start for a, b in pairwise(cues))
    position = 0
    for cue in cues:
        count = len(re.findall(WORD, cue.text))
        assert count >= 1
        own = words[position : position + count]
        assert [text[w.first : w.last] for w in own] == re.findall(WORD, cue.text)
        assert (cue.start, cue.end) == (own[0].start, own[-1].end)
        if count > 1:
            assert len(cue.text) <= MAX_CUE_CHARS
            assert cue.end - cue.start <= MAX_CUE_SECONDS
        position += count
    assert position == len(words)


def test_estimated_cues_end_at_sentence_ends_with_times_shared_by_length() -> None:
    # 100 columns in 25 s: a quarter of a second a column, the space before a cue included
    text = (
        "It rained all morning. We stayed inside and read. "
        "When the sun came out, we walked along the rivers."
    )
    cues = estimated_cues(0, 25, text)
    assert [cue.text for cue in cues] == [
        "It rained all morning.",
        "We stayed inside and read.",
        # 12.25 s to the end is too long: cut at the comma
        "When the sun came out,",
        "we walked along the rivers.",
    ]
    assert [cue.start for cue in cues] == pytest.approx([0, 5.5, 12.25, 18])
    assert [cue.end for cue in cues] == pytest.approx([5.5, 12.25, 18, 25])


def test_estimated_cues_cut_a_long_sentence_between_words() -> None:
    text = " ".join(["word"] * 20)  # 99 columns
    cues = estimated_cues(10, 14.95, text)
    # 84 columns, the most a cue holds
    assert [cue.text for cue in cues] == [" ".join(["word"] * 17), "word word word"]
    assert [(cue.start, cue.end) for cue in cues] == [(10, cues[1].start), (cues[1].start, 14.95)]
    assert cues[1].start == pytest.approx(14.2)
    text = "one two three four five six seven eight nine ten eleven twelve"
    assert [cue.text for cue in estimated_cues(0, 12, text)] == [  # 6.4 s and 5.6 s
        "one two three four five six seven",
        "eight nine ten eleven twelve",
    ]


def test_estimated_cues_cut_chinese_at_full_stops_and_by_width() -> None:
    first, second = "今天天气很好" * 5 + "。", "我们走吧" * 8 + "。"  # 62 and 66 columns
    assert estimated_cues(0, 10, first + second) == [
        Cue(0, 4.84375, first),
        Cue(4.84375, 10, second),
    ]
    text = "天" * 30 + "，" + "天" * 29 + "。" + "天" * 50
    assert [cue.text for cue in estimated_cues(0, 6, text)] == [
        "天" * 30 + "，",
        "天" * 29 + "。",
        "天" * 42,
        "天" * 8,
    ]


def test_a_word_too_long_for_a_cue_stays_whole() -> None:
    assert estimated_cues(0, 30, "x" * 200) == [Cue(0, 30, "x" * 200)]
    cues = estimated_cues(0, 3, f"a {'x' * 100} b.")
    assert [cue.text for cue in cues] == ["a", "x" * 100, "b."]


def test_no_text_gives_no_estimated_cues() -> None:
    assert estimated_cues(0, 5, "") == []
    assert estimated_cues(0, 5, " \n\t ") == []
    assert estimated_cues(0, 5, " … ") == [Cue(0, 5, "…")]


@pytest.mark.parametrize("end", [3, 2])  # 2: it ends before it starts, taken as no length
def test_a_segment_of_no_length_gives_cues_of_no_length(end: float) -> None:
    cues = estimated_cues(3, end, " ".join(["word"] * 30) + ". Bye.")
    assert [cue.text for cue in cues] == [
        " ".join(["word"] * 17),
        " ".join(["word"] * 13) + ".",
        "Bye.",
    ]
    assert all(cue.start == cue.end == 3 for cue in cues)


def is_wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


LATIN = st.text(string.ascii_letters, min_size=1, max_size=15)
CJK = st.text("你好世界今天天气很我们走吧日本語", min_size=1, max_size=15)
TOKEN = st.tuples(
    st.one_of(LATIN, LATIN, CJK),
    st.sampled_from(["", "", "", ".", ",", "!", "?", ";", ":", "。", "，"]),
    st.sampled_from([" ", " ", " ", "  ", "\n", ""]),
)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(
    tokens=st.lists(TOKEN, min_size=1, max_size=60),
    start=st.floats(0, 40),
    duration=st.floats(0, 40),
)
def test_estimated_cues_keep_the_text_and_the_limits(
    tokens: list[tuple[str, str, str]], start: float, duration: float
) -> None:
    text = "".join(word + mark + space for word, mark, space in tokens)
    end = start + duration
    cues = estimated_cues(start, end, text)

    assert (cues[0].start, cues[-1].end) == (start, end)
    assert all(cue.start <= cue.end for cue in cues)
    assert all(a.end == b.start for a, b in pairwise(cues))
    normal, position = " ".join(text.split()), 0
    for cue in cues:
        assert cue.text
        assert normal.startswith(cue.text, position)
        assert cue.text[0] not in ".,!?;:。，"  # marks stay with the word before
        position += len(cue.text)
        if normal.startswith(" ", position):
            position += 1
        elif position < len(normal):  # cut inside a run of non-space: one with wide letters
            run = normal[normal.rfind(" ", 0, position) + 1 :].split(" ")[0]
            assert any(map(is_wide, run))
        letters = len(re.findall(r"\w", cue.text))
        if " " in cue.text or (letters > 1 and any(map(is_wide, cue.text))):
            assert sum(1 + is_wide(char) for char in cue.text) <= MAX_CUE_CHARS
            assert cue.end - cue.start <= MAX_CUE_SECONDS
    assert position == len(normal)
