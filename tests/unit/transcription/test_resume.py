"""A piece's stream asked again after the backend went away: only what follows the text
already queued is queued, and an answer that says otherwise cannot go on."""

from __future__ import annotations

import pytest

from qwen3_asr_server.errors import APIError
from qwen3_asr_server.transcription.streaming import _Sent


def _queue(sent: _Sent, deltas: list[str]) -> list[str]:
    """What of one answer's deltas is queued."""
    heard, queued = "", []
    for delta in deltas:
        queued.append(sent.rest(heard, delta))
        heard += delta
    return queued


def test_the_first_answer_is_queued_whole() -> None:
    sent = _Sent()
    assert _queue(sent, ["Hello", " wor"]) == ["Hello", " wor"]
    assert sent.text == "Hello wor"


def test_an_answer_asked_again_adds_only_what_follows_whatever_its_split() -> None:
    sent = _Sent(text="Hello wor")
    assert _queue(sent, ["He", "llo", " world", ".", ""]) == ["", "", "ld", ".", ""]
    assert sent.text == "Hello world."


def test_an_answer_that_says_otherwise_ends_the_piece() -> None:
    sent = _Sent(text="Hello wor")
    with pytest.raises(APIError) as caught:
        _queue(sent, ["Hello", " there"])
    assert caught.value.status == 503
    assert sent.text == "Hello wor"


def test_logprob_entries_already_queued_are_left_out() -> None:
    sent = _Sent(logprobs=2)
    entries = [{"token": token} for token in ("a", "b", "c")]
    assert sent.rest_of(0, entries[:1]) == []
    assert sent.rest_of(1, entries[1:]) == [{"token": "c"}]
    assert sent.logprobs == 3
