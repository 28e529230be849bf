"""The merge of a recording's channels (`transcription.channels`): pure, tested directly."""

from __future__ import annotations

from qwen3_asr_server.model.alignment import Word
from qwen3_asr_server.model.languages import Language, resolve
from qwen3_asr_server.transcription.channels import merge
from qwen3_asr_server.transcription.transcript import Segment, Transcript
from qwen3_asr_server.transcription.usage import Tokens


def _segment(start: float, end: float, text: str, words: bool = False) -> Segment:
    timed = [Word(text, start, end, 0, len(text))] if words else None
    return Segment(start, end, text, [], 0.0, [{"token": text}], words=timed)


def _transcript(duration: float, *segments: Segment, language: str = "en") -> Transcript:
    spoken: Language | None = resolve(language)
    return Transcript(
        text=" ".join(segment.text for segment in segments),
        language=spoken,
        duration=duration,
        segments=list(segments),
        logprobs=[],
        tokens=Tokens(input=10, output=len(segments)),
        spoken=(spoken,) if segments and spoken else (),
        words=[word for segment in segments for word in segment.words or ()]
        if any(segment.words for segment in segments)
        else None,
    )


def test_segments_of_all_channels_are_ordered_by_time_and_labelled() -> None:
    agent = _transcript(10, _segment(0, 2, "Hello."), _segment(2.5, 3, "How can I help?"))
    customer = _transcript(9, _segment(1, 1.5, "Hi."), _segment(4, 6, "My order is late."))
    merged = merge([agent, customer])
    assert [(s.text, s.channel, s.speaker) for s in merged.segments] == [
        ("Hello.", 0, "A"),
        ("Hi.", 1, "B"),
        ("How can I help?", 0, "A"),
        ("My order is late.", 1, "B"),
    ]
    assert merged.duration == 10
    assert merged.tokens == Tokens(input=20, output=4)
    assert merged.logprobs == [{"token": s.text} for s in merged.segments]
    assert merged.words is None


def test_the_text_is_the_turns_in_time_order_a_line_each() -> None:
    agent = _transcript(8, _segment(0, 2, "Hello."), _segment(2, 3, "Anyone there?"))
    customer = _transcript(8, _segment(4, 5, "Yes."))
    merged = merge([agent, customer], names=["agent", "customer"])
    assert merged.text == "Hello. Anyone there?\nYes."
    assert [s.speaker for s in merged.segments] == ["agent", "agent", "customer"]


def test_words_take_their_channel_s_speaker_and_time_order() -> None:
    left = _transcript(4, _segment(0, 3, "long", words=True))
    right = _transcript(4, _segment(1, 2, "short", words=True))
    merged = merge([left, right], names=["L"])
    assert [(w.word, w.speaker) for w in merged.words or []] == [("long", "L"), ("short", "B")]


def test_languages_are_each_channel_s_and_a_silent_channel_adds_nothing() -> None:
    english = _transcript(5, _segment(0, 1, "Hello."))
    silent = _transcript(5)
    chinese = _transcript(5, _segment(2, 3, "你好"), _segment(3, 4, "世界"), language="zh")
    merged = merge([english, silent, chinese])
    assert [language.code for language in merged.spoken] == ["en", "zh"]
    assert merged.language is not None
    assert merged.language.code == "en"
    assert merged.text == "Hello.\n你好世界"  # Chinese joins without spaces
    assert [s.channel for s in merged.segments] == [0, 2, 2]
