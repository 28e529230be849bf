from __future__ import annotations

import itertools

import pytest

from qwen3_asr_server.model.output import LogprobFilter, SegmentedCleaner, StreamCleaner, clean

RAW_ANSWERS = [
    ("language English<asr_text>Hello world.", "Hello world.", "English"),
    ("language English\nHello world.", "Hello world.", "English"),
    ("language English,\nHello world.", "Hello world.", "English"),
    ("  language French<asr_text> Bonjour.", "Bonjour.", "French"),
    ("language Chinese<asr_text>你好，世界。", "你好，世界。", "Chinese"),
    ("language None<asr_text>", "", "None"),
    ("language None<asr_text>   ", "", "None"),
    ("language None\n", "", "None"),
    ("language English<asr_text>", "", "English"),
    ("Hello world.", "Hello world.", None),
    ("", "", None),
    ("language models are neat\nindeed", "language models are neat\nindeed", None),
    ("languages differ", "languages differ", None),
    ("language", "language", None),
    ("language Eng", "language Eng", None),
    ("language English<asr_te", "language English<asr_te", None),
    ("language English <b>bold</b>", "language English <b>bold</b>", None),
    ("language " + "x" * 60 + "<asr_text>y", "language " + "x" * 60 + "<asr_text>y", None),
]


@pytest.mark.parametrize(("raw", "text", "language"), RAW_ANSWERS)
def test_clean(raw: str, text: str, language: str | None) -> None:
    cleaned = clean(raw)
    assert cleaned.text == text
    assert cleaned.language == language
    # the language to report: none for `language None`, which means no speech was heard
    heard = cleaned.spoken_language
    assert (heard.name if heard else None) == (None if language == "None" else language)


def _stream(pieces: list[str]) -> str:
    cleaner = StreamCleaner()
    return "".join(cleaner.feed(piece) for piece in pieces) + cleaner.finish()


@pytest.mark.parametrize(("raw", "text", "_language"), RAW_ANSWERS)
def test_stream_matches_whole_answer_at_every_split(raw: str, text: str, _language: str) -> None:
    expected = clean(raw).text
    for i, j in itertools.combinations_with_replacement(range(len(raw) + 1), 2):
        assert _stream([raw[:i], raw[i:j], raw[j:]]).rstrip() == expected, (raw, i, j)


def test_stream_in_single_characters() -> None:
    raw = "language English<asr_text>Hello world."
    assert _stream(list(raw)) == "Hello world."


def test_stream_holds_back_only_while_a_prefix_is_possible() -> None:
    cleaner = StreamCleaner()
    assert cleaner.feed("language") == ""
    assert cleaner.feed(" English") == ""
    assert cleaner.feed("<asr_text>") == ""
    assert cleaner.feed("Hello") == "Hello"
    assert cleaner.feed(" world") == " world"
    assert cleaner.language == "English"
    other = StreamCleaner()
    assert other.feed("Hi") == "Hi"
    assert other.feed(" language English<asr_text>") == " language English<asr_text>"


def test_no_speech_swallows_everything_after_it() -> None:
    cleaner = StreamCleaner()
    assert cleaner.feed("language None<asr_text>") == ""
    assert cleaner.feed("phantom words") == ""
    assert cleaner.finish() == ""


def _entries(*tokens: str) -> list[dict]:
    return [{"token": token, "logprob": -0.5, "bytes": list(token.encode())} for token in tokens]


@pytest.mark.parametrize(
    ("tokens", "kept"),
    [
        (["language", " English", "<asr_text>", "Hello", " world", "."], ["Hello", " world", "."]),
        (["language", " English", "\n", "Hello", " world."], ["Hello", " world."]),
        (["Hello", " world", ".", "<|im_end|>"], ["Hello", " world", "."]),
        (
            ["language", " models", " are", " big", "."],
            ["language", " models", " are", " big", "."],
        ),
        (["language", " None", "<asr_text>", "<|im_end|>"], []),
        (list("language English<asr_text>Hi"), ["H", "i"]),
    ],
)
def test_logprob_filter_keeps_only_the_texts_tokens(tokens: list[str], kept: list[str]) -> None:
    whole = LogprobFilter()
    assert [entry["token"] for entry in whole.feed(_entries(*tokens)) + whole.finish()] == kept
    one_by_one = LogprobFilter()
    streamed = [e for token in tokens for e in one_by_one.feed(_entries(token))]
    assert [entry["token"] for entry in streamed + one_by_one.finish()] == kept


SEGMENTED = [
    # vLLM's realtime endpoint: one prefix per 5 s segment, the segments run together
    (
        "language English<asr_text>Hello world.language English<asr_text>And then.",
        "Hello world. And then.",
    ),
    (
        "language English<asr_text>One.language None<asr_text>language French<asr_text>Deux.",
        "One. Deux.",
    ),
    ("language None<asr_text>language None<asr_text>", ""),
    ("language English<asr_text>the language English is fine.", "the language English is fine."),
    ("language English<asr_text>Hello language", "Hello language"),
    ("language English<asr_text>Hello.language English<asr_te", "Hello.language English<asr_te"),
    ("language English<asr_text>你好。language Chinese<asr_text>世界。", "你好。 世界。"),
    ("Hello.", "Hello."),
    ("", ""),
]


def _segments(pieces: list[str]) -> str:
    cleaner = SegmentedCleaner()
    return "".join(cleaner.feed(piece) for piece in pieces) + cleaner.finish()


@pytest.mark.parametrize(("raw", "text"), SEGMENTED)
def test_segmented_answers_at_every_split(raw: str, text: str) -> None:
    assert _segments([raw]) == text
    for i, j in itertools.combinations_with_replacement(range(len(raw) + 1), 2):
        assert _segments([raw[:i], raw[i:j], raw[j:]]) == text, (raw, i, j)


def test_segmented_holds_back_only_what_may_be_a_prefix() -> None:
    cleaner = SegmentedCleaner()
    assert cleaner.feed("language English<asr_text>Hello") == "Hello"
    assert cleaner.feed(" world.lang") == " world."
    assert cleaner.feed("uage English<asr_text>") == ""
    assert cleaner.feed("Next") == " Next"
    assert cleaner.finish() == ""
