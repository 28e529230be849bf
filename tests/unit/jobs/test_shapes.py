"""A batch's input file read: line by line, up to OpenAI's 50,000 requests, each line checked
for what would fail it later (a body nested deeper than the store can write)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from qwen3_asr_server.entrypoints.jobs import shapes
from qwen3_asr_server.entrypoints.jobs.shapes import (
    MAX_DEPTH,
    MAX_ERRORS,
    MAX_LINES,
    TRANSCRIPTIONS,
)


def _line(number: int, body: Any = None) -> bytes:
    line = {"custom_id": f"c{number}", "method": "POST", "url": TRANSCRIPTIONS, "body": body or {}}
    return json.dumps(line).encode() + b"\n"


def _nested(depth: int) -> bytes:
    """A line whose body is `depth` deep: the body, then depth - 1 arrays in it."""
    body = b'{"x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    return b'{"custom_id":"deep","method":"POST","url":"%s","body":%s}\n' % (
        TRANSCRIPTIONS.encode(),
        body,
    )


def test_lines_become_rows_in_order_and_blank_lines_are_skipped() -> None:
    rows, errors = shapes.read_input([_line(1), b"\n", b"  \r\n", _line(2)], TRANSCRIPTIONS)
    assert errors == []
    assert [(row["idx"], row["custom_id"]) for row in rows] == [(0, "c1"), (1, "c2")]


def test_reading_stops_at_the_first_line_past_the_cap() -> None:
    read: list[int] = []

    def lines() -> Iterator[bytes]:
        for number in range(1, MAX_LINES + 1000):
            read.append(number)
            yield _line(number)

    rows, errors = shapes.read_input(lines(), TRANSCRIPTIONS)
    assert len(rows) == MAX_LINES
    assert [(error["code"], error["line"]) for error in errors] == [
        ("too_many_requests", MAX_LINES + 1)
    ]
    assert read[-1] == MAX_LINES + 1


def test_reading_stops_at_the_hundredth_problem() -> None:
    rows, errors = shapes.read_input((b"not json\n" for _ in range(1000)), TRANSCRIPTIONS)
    assert rows == []
    assert len(errors) == MAX_ERRORS
    assert errors[-1] == {
        "code": "invalid_json",
        "line": MAX_ERRORS,
        "message": "This line is not valid JSON.",
        "param": None,
    }


def test_a_body_nested_past_the_limit_fails_the_batch_at_its_line() -> None:
    rows, errors = shapes.read_input([_line(1), _nested(MAX_DEPTH + 1)], TRANSCRIPTIONS)
    assert [(e["code"], e["line"], e["param"]) for e in errors] == [("invalid_request", 2, "body")]
    rows, errors = shapes.read_input([_nested(MAX_DEPTH)], TRANSCRIPTIONS)
    assert (len(rows), errors) == (1, [])


def test_depth_counts_objects_and_arrays_alike() -> None:
    assert not shapes.deeper_than(1, 0)
    assert shapes.deeper_than({}, 0)
    assert not shapes.deeper_than({"a": [1, {}]}, 3)
    assert shapes.deeper_than({"a": [1, {"b": []}]}, 3)
    assert not shapes.deeper_than([[], {"a": "b"}, 3], 2)
