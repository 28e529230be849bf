"""Which listening addresses reach beyond this machine (the warning at start without a key)."""

from __future__ import annotations

import pytest

from qwen3_asr_server.serving.server import beyond_loopback


@pytest.mark.parametrize(
    ("host", "beyond"),
    [
        ("127.0.0.1", False),
        ("127.0.0.2", False),
        ("::1", False),
        ("localhost", False),
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.5", True),
        ("asr.internal", True),  # a name may resolve to anything
    ],
)
def test_loopback_addresses_and_localhost_stay_on_this_machine(host: str, beyond: bool) -> None:
    assert beyond_loopback(host) is beyond
