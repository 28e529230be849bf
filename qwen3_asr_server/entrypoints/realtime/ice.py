"""Which of the server's addresses a WebRTC call offers the caller (its ICE host candidates),
and which of the caller's candidates it checks.

No STUN or TURN server is asked: the server is reached at an address it has, as its HTTP
port is. aioice, left to itself, offers every address of every interface but loopback, so a
server bound to 127.0.0.1 (or to one interface) would tell callers its other addresses, and
could not take a call on loopback at all. When `--host` is one address, the call's candidates
are gathered on it alone; a wildcard (`0.0.0.0`, `::`) or a host name leaves aioice's choice.

aioice has no parameter for the addresses it gathers on: its `Connection` is given its
candidates here before aiortc asks it to gather (which it then skips), through the attributes
its own `gather_candidates` sets. `tests/integration/realtime/test_webrtc.py` checks the
answer's candidates, so an aioice that changes them fails there, not in production.

Each candidate an offer lists draws STUN checks from the server to that address and port, so the
offer is screened before aiortc sees it: only addresses in the scope the server offers are kept
(loopback ones by a server that offers loopback, any other unicast address by one that offers
its network addresses; never link-local, multicast, broadcast, unspecified or reserved ones, nor
a cloud's metadata service, nor an IPv6 address that leads to an IPv4 one through a tunnel or
translator: 6to4, Teredo, NAT64, `entrypoints.protocol.addresses.carried`), and at most
MAX_CANDIDATES distinct ones. Browsers' mDNS names (`<uuid>.local`) are dropped unresolved:
resolving one asks the server's LAN by multicast and yields an address checked after this screen;
the browser's own checks reach the server, which then knows its address (a peer-reflexive
candidate), as for an offer that lists no candidates at all.
"""

from __future__ import annotations

import ipaddress

from aioice import Connection
from aiortc import RTCPeerConnection

from ...errors import invalid
from ..protocol import addresses

CANDIDATE = "a=candidate:"
END = "a=end-of-candidates"
MAX_CANDIDATES = 8  # a browser lists 1-4 per network interface
# neither link-local nor reserved, yet never a caller: AWS's IPv6 metadata service, IPv4's
# "this network", a local NAT64 prefix (a translator's, as `addresses.carried`'s are)
NEVER = (
    ipaddress.ip_network("fd00:ec2::254/128"),
    ipaddress.ip_network("0.0.0.0/8"),
    addresses.NAT64_LOCAL,
)


def bound_address(host: str) -> str | None:
    """The one address `--host` names; None for a wildcard or a host name."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return None if address.is_unspecified else str(address)


def offers_loopback(host: str) -> bool:
    """Whether a server on `host` offers a loopback address (then it offers nothing else;
    aioice, left to gather, offers every address but loopback)."""
    address = bound_address(host)
    return address is not None and ipaddress.ip_address(address).is_loopback


def reachable(host: str, loopback: bool) -> bool:
    """Whether a remote candidate's address is checked by a server that offers loopback
    (`loopback`) or its network addresses: one of the same scope, and a unicast one."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and not address.is_loopback:
        if address.ipv4_mapped is not None:  # a dual-stack socket's spelling of an IPv4 one
            address = address.ipv4_mapped
        elif addresses.carried(address) is not None:  # a tunnel's or translator's: beyond scope
            return False
    if address.is_loopback:
        return loopback
    return not (
        loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
        or any(address in network for network in NEVER)
    )


def screen(sdp: str, loopback: bool) -> str:
    """The offer with only the candidates the server checks (`reachable`, MAX_CANDIDATES
    distinct ones, mDNS names dropped); a 400 when it lists candidates and none is a caller's.

    A server that offers loopback checks no network candidate, yet takes an offer of them: a
    browser on its machine lists its network addresses, and its checks reach loopback. Where a
    candidate is dropped, so is `a=end-of-candidates`: told there are no more, aioice fails a
    call whose caller's address it has not yet learnt from the caller's checks."""
    listed: set[tuple[str, ...]] = set()  # transport, address and port: a bundle repeats them
    kept: set[tuple[str, ...]] = set()
    callers = False  # some candidate is an address a caller could have
    dropped = False
    lines = []
    for line in sdp.splitlines(keepends=True):
        if line.startswith(CANDIDATE):
            fields = line[len(CANDIDATE) :].lower().split()
            if len(fields) > 4 and fields[4].endswith(".local"):
                dropped = True
                continue
            endpoint = (*fields[2:3], *fields[4:6])
            listed.add(endpoint)
            formed = len(fields) >= 8  # foundation ... port, "typ", a type
            callers = callers or (formed and reachable(fields[4], False))
            if not (formed and reachable(fields[4], loopback)) or (
                endpoint not in kept and len(kept) >= MAX_CANDIDATES
            ):
                dropped = True
                continue
            kept.add(endpoint)
        lines.append(line)
    if listed and not (kept or callers):
        offered, never = ("loopback", "") if loopback else ("its network", ", nor loopback")
        raise invalid(
            f"None of the offer's {len(listed)} ICE candidates can be checked: this server "
            f"offers {offered} addresses, and checks no link-local, multicast, broadcast or "
            f"unspecified address{never}. Call from where its address can be reached, or send "
            "the offer with no candidates.",
            "sdp",
            "invalid_offer",
        )
    if dropped:
        lines = [line for line in lines if not line.startswith(END)]
    return "".join(lines)


async def gather_on(pc: RTCPeerConnection, address: str) -> None:
    """Gather the candidates of `pc`'s transports (after its remote offer is set, before its
    answer) on `address` only."""
    transports = [each.receiver.transport for each in pc.getTransceivers()]
    if pc.sctp is not None:
        transports.append(pc.sctp.transport)
    connections = {id(c): c for c in (t.transport.iceGatherer._connection for t in transports)}
    for connection in connections.values():
        await _gather(connection, address)


async def _gather(connection: Connection, address: str) -> None:
    connection._local_candidates_start = True
    connection._local_candidates += await connection.get_component_candidates(1, [address])
    connection._local_candidates_end = True
