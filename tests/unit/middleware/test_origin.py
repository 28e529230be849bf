"""Which pages may open a WebSocket here: the server's own, and those allowed by name."""

from __future__ import annotations

import pytest

from qwen3_asr_server.entrypoints.middleware.origin import admitted, normal


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("https://App.Example.com/", "https://app.example.com"),
        ("https://app.example.com:443", "https://app.example.com"),
        ("http://app.example.com:80", "http://app.example.com"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("null", "null"),
    ],
)
def test_origins_are_compared_in_one_spelling(origin: str, expected: str) -> None:
    assert normal(origin) == expected


@pytest.mark.parametrize(
    ("origin", "host", "allowed", "expected"),
    [
        ("http://localhost:8000", "localhost:8000", set(), True),  # the playground, here
        ("https://asr.example.com", "asr.example.com", set(), True),  # behind TLS
        ("https://asr.example.com", "asr.example.com:443", set(), True),
        ("http://localhost:3000", "localhost:8000", set(), False),  # another port is a site
        ("http://evil.example", "localhost:8000", set(), False),
        ("http://evil.example", None, set(), False),
        ("null", "localhost:8000", set(), False),
        ("http://localhost:3000", "localhost:8000", {"http://localhost:3000"}, True),
        ("http://evil.example", "localhost:8000", {"*"}, True),
    ],
)
def test_a_page_is_admitted_from_this_host_or_a_named_origin(
    origin: str, host: str | None, allowed: set[str], expected: bool
) -> None:
    assert admitted(origin, host, frozenset(allowed)) is expected
