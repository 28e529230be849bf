"""POST /v1/realtime/calls with offers no browser would make: the candidates an offer lists do
not aim the server's STUN checks where they like, an offer that could never connect is a 400,
and a call that does not connect gives its seat back. aiortc makes the offers, edited."""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
from aiortc import RTCSessionDescription

from qwen3_asr_server.entrypoints.realtime.ice import MAX_CANDIDATES
from tests.fixtures import metrics
from tests.integration.realtime.test_webrtc import (
    PATTERN,
    SESSIONS,
    calling,
    count,
    offer_sdp,
    offering,
    post_sdp,
    serving,
    wav_of,
)

CANDIDATES = re.compile(r"^a=(candidate:.*|end-of-candidates)\r\n", re.MULTILINE)
STUN_COOKIE = b"\x21\x12\xa4\x42"  # at bytes 4-8 of every STUN message (RFC 5389)
REFUSED = 'qwen3_asr_requests_total{method="POST",path="/v1/realtime/calls",status="400"}'


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wav_of(tmp_path_factory.mktemp("offers") / "speech.wav", PATTERN)


def listing(sdp: str, addresses: list[tuple[str, int]]) -> str:
    """The offer with its candidates replaced by host candidates at `addresses`, in each
    media section, as a browser lists them."""
    lines = "".join(
        f"a=candidate:{n} 1 udp 2122260223 {host} {port} typ host\r\n"
        for n, (host, port) in enumerate(addresses)
    )
    sections = CANDIDATES.sub("", sdp).split("m=")
    return "m=".join([sections[0], *(section + lines for section in sections[1:])])


@contextmanager
def listeners(n: int) -> Iterator[list[socket.socket]]:
    """`n` UDP sockets on loopback ports, for an offer to name as its candidates."""
    with ExitStack() as stack:
        sockets = []
        for _ in range(n):
            udp = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            udp.bind(("127.0.0.1", 0))
            udp.setblocking(False)
            sockets.append(udp)
        yield sockets


def stun_drawn(sockets: list[socket.socket]) -> list[int]:
    """The STUN messages each socket received since last asked."""
    drawn = []
    for udp in sockets:
        received = 0
        while True:
            try:
                packet = udp.recv(2048)
            except BlockingIOError:
                break
            received += packet[4:8] == STUN_COOKIE
        drawn.append(received)
    return drawn


async def test_an_offer_without_a_dtls_fingerprint_is_a_400(speech: Path) -> None:
    with serving() as url:
        peer = offering(speech)
        try:
            sdp = await offer_sdp(peer)
            bare = re.sub(r"^a=fingerprint:.*\r\n", "", sdp, flags=re.MULTILINE)
            refused = await post_sdp(url, bare)
        finally:
            await peer.pc.close()
        async with httpx.AsyncClient() as http:
            counted = metrics.value((await http.get(f"{url}/metrics")).text, REFUSED, absent=0)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        "sdp",
        "invalid_offer",
    )
    assert "DTLS fingerprint" in error["message"]
    assert counted == 1


async def test_a_network_server_neither_checks_nor_takes_an_offer_of_loopback_ports(
    speech: Path,
) -> None:
    """A server offering its network addresses (`--host 0.0.0.0`) is asked to check 20
    loopback ports, a cloud's metadata service and a multicast group: it refuses the offer and
    sends them nothing."""
    with serving() as url, listeners(20) as sockets:
        peer = offering(speech)
        try:
            ports = [("127.0.0.1", udp.getsockname()[1]) for udp in sockets]
            aimed = [*ports, ("169.254.169.254", 80), ("224.0.0.1", 9)]
            refused = await post_sdp(url, listing(await offer_sdp(peer), aimed))
            await asyncio.sleep(2)
        finally:
            await peer.pc.close()
        drawn = stun_drawn(sockets)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["param"], error["code"]) == ("sdp", "invalid_offer")
    assert "None of the offer's 22 ICE candidates can be checked" in error["message"]
    assert sum(drawn) == 0


async def test_a_call_checks_at_most_8_of_the_candidates_its_offer_lists(speech: Path) -> None:
    with serving(host="127.0.0.1") as url, listeners(20) as sockets:
        peer = offering(speech)
        try:
            ports = [("127.0.0.1", udp.getsockname()[1]) for udp in sockets]
            answered = await post_sdp(url, listing(await offer_sdp(peer), ports))
            assert answered.status_code == 201, answered.text
            drawn = [0] * len(sockets)
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:  # every check sent, and sent again
                await asyncio.sleep(0.5)
                drawn = [a + b for a, b in zip(drawn, stun_drawn(sockets), strict=True)]
        finally:
            await peer.pc.close()
    hit = [n for n, received in enumerate(drawn) if received]
    assert hit == list(range(MAX_CANDIDATES)), drawn  # the first 8, as listed


async def _sessions(url: str) -> float:
    async with httpx.AsyncClient() as http:
        return metrics.value((await http.get(f"{url}/metrics")).text, SESSIONS)


async def test_a_call_that_never_connects_gives_its_seat_back_in_10_s(speech: Path) -> None:
    with serving(host="127.0.0.1", max_sessions=1) as url:
        silent = offering(speech)  # offers, and never takes the answer
        try:
            answered = await post_sdp(url, CANDIDATES.sub("", await offer_sdp(silent)))
            assert answered.status_code == 201, answered.text
            began = time.monotonic()
            while await _sessions(url) != 0:
                assert time.monotonic() - began < 14, "the unconnected call kept its seat"
                await asyncio.sleep(0.1)
            freed = time.monotonic() - began
        finally:
            await silent.pc.close()
        async with calling(url, speech) as peer:  # the seat is the next caller's
            await peer.until(count("session.created"))
    assert freed > 9


@pytest.mark.parametrize("listed", ["mdns", "none"])
async def test_an_offer_of_mdns_names_or_no_candidates_connects_peer_reflexively(
    speech: Path, listed: str
) -> None:
    """A browser hides its addresses behind `<uuid>.local` names, or has gathered none yet:
    the server checks nothing, and learns the caller's address from the caller's checks."""
    with serving() as url:
        peer = offering(speech)
        try:
            sdp = await offer_sdp(peer)
            if listed == "mdns":
                names = [(f"{n:08x}-8a1f-4e2b-9c3d-5e6f7a8b9c0d.local", 9) for n in range(3)]
                sdp = listing(sdp, names)
            else:
                sdp = CANDIDATES.sub("", sdp)
            answered = await post_sdp(url, sdp)
            assert answered.status_code == 201, answered.text
            await peer.pc.setRemoteDescription(RTCSessionDescription(answered.text, "answer"))
            events = await peer.until(count("session.created"))
        finally:
            await peer.pc.close()
    assert events[0]["type"] == "session.created"
