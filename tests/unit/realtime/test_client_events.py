"""Realtime client frames: each a JSON object with a string type, as OpenAI's API takes it."""

from __future__ import annotations

import pytest

from qwen3_asr_server.entrypoints.realtime.client_events import client_event_id, parse_client_event
from qwen3_asr_server.errors import EventError


def test_parse_client_event() -> None:
    event = parse_client_event('{"type": "input_audio_buffer.commit", "event_id": "e1"}', 100)
    assert event == {"type": "input_audio_buffer.commit", "event_id": "e1"}
    assert client_event_id(event) == "e1"
    assert client_event_id({"type": "x", "event_id": 5}) is None


@pytest.mark.parametrize(
    ("frame", "code", "param"),
    [
        ("not json", "invalid_json", None),
        ('{"type": "x"', "invalid_json", None),
        ('{"type": "x", "v": NaN}', "invalid_json", None),
        ("", "invalid_json", None),
        ('[{"type": "x"}]', "invalid_event", None),
        ('"session.update"', "invalid_event", None),
        ("null", "invalid_event", None),
        ('{"event_id": "e1"}', "invalid_event", "type"),
        ('{"type": 5}', "invalid_event", "type"),
        ('{"type": null}', "invalid_event", "type"),
        (b'{"type": "input_audio_buffer.commit"}', "binary_frame_not_supported", None),
    ],
)
def test_parse_client_event_refusals(frame: str | bytes, code: str, param: str | None) -> None:
    with pytest.raises(EventError) as caught:
        parse_client_event(frame, 1000)
    assert (caught.value.code, caught.value.param) == (code, param)


def test_size_limit_counts_utf8_bytes() -> None:
    ascii_frame = '{"type": "x", "t": "' + "a" * 80 + '"}'
    assert parse_client_event(ascii_frame, len(ascii_frame))["type"] == "x"
    with pytest.raises(EventError) as caught:
        parse_client_event(ascii_frame, len(ascii_frame) - 1)
    assert caught.value.code == "event_too_large"
    wide = '{"type": "x", "t": "' + "é" * 40 + '"}'  # 2 bytes each in UTF-8
    assert len(wide) <= 100 < len(wide.encode())
    with pytest.raises(EventError, match=r"larger than 100 bytes"):
        parse_client_event(wide, 100)
    assert parse_client_event(wide, len(wide.encode()))["t"] == "é" * 40
