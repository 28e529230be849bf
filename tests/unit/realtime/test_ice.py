"""Which of a caller's ICE candidates a call checks: the screen an offer passes before aiortc
sees it, so that no offer can aim the server's STUN checks where it likes."""

from __future__ import annotations

import pytest

from qwen3_asr_server.entrypoints.realtime.ice import (
    MAX_CANDIDATES,
    offers_loopback,
    reachable,
    screen,
)
from qwen3_asr_server.errors import APIError

HEAD = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\na=fingerprint:sha-256 AB:CD\r\n"
AUDIO = "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
DATA = "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"
END = "a=end-of-candidates\r\n"


def candidate(address: str, port: int = 5000, transport: str = "udp") -> str:
    return f"a=candidate:1 1 {transport} 2122260223 {address} {port} typ host\r\n"


def candidates(sdp: str) -> list[str]:
    return [line for line in sdp.splitlines(keepends=True) if line.startswith("a=candidate:")]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("192.0.2.7", False),
        ("0.0.0.0", False),  # aioice's own choice: every address but loopback
        ("::", False),
        ("localhost", False),
    ],
)
def test_a_server_offers_loopback_only_when_it_listens_on_it(host: str, loopback: bool) -> None:
    assert offers_loopback(host) is loopback


@pytest.mark.parametrize(
    "address",
    [
        *("192.168.1.20", "10.0.0.5", "172.16.3.4", "100.64.0.1", "203.0.113.9", "8.8.8.8"),
        *("2001:db8::1", "fd12:3456::1", "2a00:1450:4001::200e", "::ffff:10.0.0.5"),
    ],
)
def test_a_network_server_checks_unicast_network_candidates_not_loopback(address: str) -> None:
    assert reachable(address, loopback=False)
    assert not reachable(address, loopback=True)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"])
def test_a_loopback_server_checks_loopback_candidates_only(address: str) -> None:
    assert reachable(address, loopback=True)
    assert not reachable(address, loopback=False)


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",  # a cloud's metadata service, link-local
        "169.254.1.1",
        "fe80::1",
        "fd00:ec2::254",  # AWS's IPv6 metadata service, a ULA
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",  # the metadata service through NAT64
        "64:ff9b::808:808",  # any IPv4 host through NAT64, public ones too
        "64:ff9b:1::a00:5",  # a local NAT64 prefix
        "2002:c0a8:114::1",  # 192.168.1.20 through 6to4
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "::ffff:0:7f00:1",  # IPv4-translated loopback
        "224.0.0.1",
        "239.255.255.250",
        "ff02::1",
        "255.255.255.255",
        "0.0.0.0",
        "0.1.2.3",
        "::",
        "240.0.0.1",
        "::127.0.0.1",  # IPv4-compatible, deprecated and reserved
        "example.com",
        "not an address",
    ],
)
def test_no_server_checks_addresses_that_are_nobodys_peer(address: str) -> None:
    assert not reachable(address, loopback=False)
    assert not reachable(address, loopback=True)


def test_an_offer_keeps_its_candidates_in_scope_and_drops_the_rest() -> None:
    sdp = HEAD + AUDIO + candidate("10.0.0.5") + candidate("127.0.0.1") + DATA
    sdp += candidate("169.254.169.254") + candidate("224.0.0.1") + END
    # without end-of-candidates: the caller's checks may yet show its address
    assert screen(sdp, loopback=False) == HEAD + AUDIO + candidate("10.0.0.5") + DATA
    assert screen(sdp, loopback=True) == HEAD + AUDIO + candidate("127.0.0.1") + DATA
    whole = HEAD + AUDIO + candidate("10.0.0.5") + END + DATA + candidate("10.0.0.5") + END
    assert screen(whole, loopback=False) == whole


def test_at_most_8_distinct_candidates_are_kept_a_bundles_repeats_included() -> None:
    listed = [candidate("127.0.0.1", port) for port in range(5000, 5020)]
    kept = screen(HEAD + AUDIO + "".join(listed) + DATA + "".join(listed), loopback=True)
    first = listed[:MAX_CANDIDATES]
    assert candidates(kept) == first + first  # the data channel's section repeats the audio's
    tcp = screen(HEAD + AUDIO + "".join(listed[:8]) + candidate("127.0.0.1", 1, "tcp"), True)
    assert len(candidates(tcp)) == MAX_CANDIDATES


def test_mdns_names_are_dropped_as_if_the_offer_listed_none() -> None:
    mdns = candidate("3f1c9a7e-2b4d-4e1a-9c1f-5d2e8b7a6c01.local")
    assert screen(HEAD + AUDIO + mdns + DATA, loopback=False) == HEAD + AUDIO + DATA
    both = HEAD + AUDIO + mdns + candidate("192.168.1.20") + DATA
    assert candidates(screen(both, loopback=False)) == [candidate("192.168.1.20")]


def test_a_loopback_server_takes_an_offer_of_network_candidates_checking_none() -> None:
    """A browser on the server's machine lists its network addresses; its checks reach the
    server's loopback address, which learns the browser's from them."""
    sdp = HEAD + AUDIO + candidate("192.168.1.20") + DATA
    assert screen(sdp, loopback=True) == HEAD + AUDIO + DATA


def test_an_offer_listing_no_candidates_is_left_as_it_is() -> None:
    sdp = HEAD + AUDIO + DATA
    assert screen(sdp, loopback=False) == sdp


@pytest.mark.parametrize(
    ("listed", "loopback"),
    [
        ([candidate("127.0.0.1", port) for port in range(5000, 5200)], False),
        ([candidate("169.254.169.254")], True),
        ([candidate("169.254.169.254"), candidate("ff02::1")], False),
        (["a=candidate:1 1 udp 1 10.0.0.5\r\n"], False),  # no port, no type
    ],
)
def test_an_offer_whose_candidates_are_all_unusable_is_a_400(
    listed: list[str], loopback: bool
) -> None:
    with pytest.raises(APIError) as refused:
        screen(HEAD + AUDIO + "".join(listed) + DATA, loopback)
    assert (refused.value.status, refused.value.param, refused.value.code) == (
        400,
        "sdp",
        "invalid_offer",
    )
    assert f"None of the offer's {len(listed)} ICE candidates" in refused.value.message
