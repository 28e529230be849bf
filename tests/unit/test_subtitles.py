from __future__ import annotations

import re

import pytest

from qwen3_asr_server.subtitles import Cue, srt, timestamp, vtt, wrap

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
