"""The one redaction function every log line goes through, and the filter that applies it."""

from __future__ import annotations

import logging

import pytest

from qwen3_asr_server.observability.log_redaction import MASK, Redacting, redact

SECRET = "sk-Zq81/k+ey"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "/v1/realtime?intent=transcription&api_key=abc",
            "/v1/realtime?intent=transcription&api_key=***",
        ),
        ('"WebSocket /v1/realtime?API_KEY=abc" 401', '"WebSocket /v1/realtime?API_KEY=***" 401'),
        ("/x?key=a&token=b&model=m", "/x?key=***&token=***&model=m"),
        ("/x?access_token=a;client_secret=b", "/x?access_token=***;client_secret=***"),
        (
            "/x?apiKey=a&x-api-key=b&Authorization=c",
            "/x?apiKey=***&x-api-key=***&Authorization=***",
        ),
        ("/x?password=a&pwd=b&auth=c&sig=d", "/x?password=***&pwd=***&auth=***&sig=***"),
        ("/x?api%5Fkey=a%20b", "/x?api%5Fkey=***"),
        ("/x?api_key=", "/x?api_key=***"),
        ("/x?language=en&intent=transcription", "/x?language=en&intent=transcription"),
        ("no query here: key = value", "no query here: key = value"),
        ("a=1&b=2 and then ?token=x y", "a=1&b=2 and then ?token=*** y"),
    ],
)
def test_credential_like_query_parameters_are_masked(line: str, expected: str) -> None:
    assert redact(line) == expected


def test_the_servers_own_secrets_are_masked_anywhere_and_percent_encoded() -> None:
    line = f"/v1/models/{SECRET} and /x/sk-Zq81%2Fk%2Bey and /y?q=sk-Zq81%2Fk%2Bey"
    assert redact(line, [SECRET, ""]) == f"/v1/models/{MASK} and /x/{MASK} and /y?q={MASK}"
    assert redact(line) == line


def test_redaction_is_a_fixpoint() -> None:
    once = redact(f"/x?token={SECRET}&q=1", [SECRET])
    assert redact(once, [SECRET]) == once == f"/x?token={MASK}&q=1"


def test_the_filter_rewrites_messages_and_keeps_tuple_arguments() -> None:
    record = logging.LogRecord(
        "uvicorn.error",
        logging.INFO,
        __file__,
        1,
        '%s - "WebSocket %s" %d',
        ("127.0.0.1:5", f"/v1/realtime?api_key={SECRET}", 101),
        None,
    )
    assert Redacting([SECRET]).filter(record)
    assert isinstance(record.args, tuple)
    assert record.getMessage() == '127.0.0.1:5 - "WebSocket /v1/realtime?api_key=***" 101'


def test_a_secret_inside_an_argument_that_is_not_a_string_is_flattened_away() -> None:
    class Shown:
        def __str__(self) -> str:
            return f"/v1/models?token={SECRET}"

    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%s", (Shown(),), None)
    Redacting([]).filter(record)
    assert record.getMessage() == "/v1/models?token=***"
