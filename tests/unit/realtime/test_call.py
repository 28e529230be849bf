"""A WebRTC call's pure parts: its channel's rate limit, and the address it offers."""

from __future__ import annotations

import pytest

from qwen3_asr_server.entrypoints.realtime.call import Bucket
from qwen3_asr_server.entrypoints.realtime.ice import bound_address


def test_the_bucket_takes_a_burst_then_the_rate() -> None:
    bucket = Bucket(rate=50, burst=100)
    assert all(bucket.admit(10.0) for _ in range(100))
    assert not bucket.admit(10.0)
    assert sum(bucket.admit(11.0) for _ in range(80)) == 50  # a second later: 50 more
    assert sum(bucket.admit(20.0) for _ in range(300)) == 100  # never more than the burst


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("192.0.2.7", "192.0.2.7"),
        ("::1", "::1"),
        ("0.0.0.0", None),
        ("::", None),
        ("localhost", None),
    ],
)
def test_a_host_naming_one_address_keeps_the_candidates_on_it(
    host: str, address: str | None
) -> None:
    assert bound_address(host) == address
