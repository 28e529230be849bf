"""Which of the server's addresses a WebRTC call offers the caller (its ICE host candidates).

No STUN or TURN server is asked: the server is reached at an address it has, as its HTTP
port is. aioice, left to itself, offers every address of every interface but loopback, so a
server bound to 127.0.0.1 (or to one interface) would tell callers its other addresses, and
could not take a call on loopback at all. When `--host` is one address, the call's candidates
are gathered on it alone; a wildcard (`0.0.0.0`, `::`) or a host name leaves aioice's choice.

aioice has no parameter for the addresses it gathers on: its `Connection` is given its
candidates here before aiortc asks it to gather (which it then skips), through the attributes
its own `gather_candidates` sets. `tests/integration/realtime/test_webrtc.py` checks the
answer's candidates, so an aioice that changes them fails there, not in production.
"""

from __future__ import annotations

import ipaddress

from aioice import Connection
from aiortc import RTCPeerConnection


def bound_address(host: str) -> str | None:
    """The one address `--host` names; None for a wildcard or a host name."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return None if address.is_unspecified else str(address)


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
